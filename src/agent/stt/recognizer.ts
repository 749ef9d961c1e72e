// Speech-to-text for the agent: an utterance is started at speech onset, fed 16 kHz PCM while the
// caller talks (so little work remains at the end of the turn), and finished at end of turn.
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { WorkerReply, WorkerRequest } from './pocketsphinxWorker.js';

export interface Utterance {
  write(pcm16k: Int16Array): void;
  /** The final transcript. */
  finish(): Promise<string>;
  abort(): void;
}

export interface SpeechRecognizer {
  start(onPartial?: (text: string) => void): Utterance;
  close(): Promise<void>;
}

export const POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

/** One worker thread per process, shared by every call. */
export class PocketSphinxRecognizer implements SpeechRecognizer {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly finals = new Map<number, { resolve: (t: string) => void; reject: (e: Error) => void }>();
  private readonly partials = new Map<number, (t: string) => void>();
  private failure: Error | undefined;
  /** Settles once the worker has loaded its first decoder (or failed to). */
  private readonly ready: Promise<void>;

  constructor(modelDir = POCKETSPHINX_MODEL_DIR) {
    if (!existsSync(`${modelDir}/en-us.lm.bin`)) {
      throw new Error(`no PocketSphinx model in ${modelDir}: install the Debian packages pocketsphinx and pocketsphinx-en-us`);
    }
    this.worker = new Worker(new URL('./pocketsphinxWorker.entry.mjs', import.meta.url), { workerData: { modelDir } });
    this.worker.unref();
    let settle: () => void = () => {};
    this.ready = new Promise<void>((resolve) => (settle = resolve));
    this.worker.on('exit', () => settle());
    this.worker.on('message', (m: WorkerReply) => {
      if (m.op === 'ready' || (m.op === 'error' && m.id === 0)) settle();
      if (m.op === 'partial') this.partials.get(m.id)?.(m.text);
      else if (m.op === 'final') {
        this.finals.get(m.id)?.resolve(m.text);
        this.finals.delete(m.id);
        this.partials.delete(m.id);
      } else if (m.op === 'error') {
        const err = new Error(`speech recogniser: ${m.message}`);
        if (m.id === 0) this.failure = err;
        this.finals.get(m.id)?.reject(err);
        this.finals.delete(m.id);
      }
    });
    this.worker.on('error', (err) => {
      this.failure = err;
      for (const f of this.finals.values()) f.reject(err);
      this.finals.clear();
    });
  }

  start(onPartial?: (text: string) => void): Utterance {
    const id = this.nextId++;
    const post = (msg: WorkerRequest) => this.worker.postMessage(msg);
    post({ op: 'start', id });
    if (onPartial) this.partials.set(id, onPartial);
    let done = false;
    return {
      write: (pcm) => {
        if (!done) post({ op: 'audio', id, pcm });
      },
      finish: () => {
        if (this.failure) return Promise.reject(this.failure);
        done = true;
        return new Promise<string>((resolve, reject) => {
          this.finals.set(id, { resolve, reject });
          post({ op: 'end', id });
        });
      },
      abort: () => {
        if (done) return;
        done = true;
        this.partials.delete(id);
        post({ op: 'abort', id });
      },
    };
  }

  async close(): Promise<void> {
    // Terminating a worker inside a native call (loading the model, decoding) aborts the process:
    // let it finish its current message and leave by itself; terminate only if it does not.
    await Promise.race([this.ready, new Promise((r) => setTimeout(r, 20_000).unref())]);
    const exited = new Promise((r) => this.worker.once('exit', r));
    this.worker.postMessage({ op: 'shutdown' } satisfies WorkerRequest);
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
    await this.worker.terminate();
  }
}
