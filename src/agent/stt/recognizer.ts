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

/**
 * PocketSphinx in a small pool of worker threads shared by every call (one per core by default:
 * each stream costs about 0.3-0.4 of a core while the caller talks). An utterance goes to the
 * worker with the fewest in progress.
 */
export class PocketSphinxRecognizer implements SpeechRecognizer {
  private readonly workers: { worker: Worker; ready: Promise<void>; active: number }[] = [];
  private nextId = 1;
  private readonly finals = new Map<number, { resolve: (t: string) => void; reject: (e: Error) => void }>();
  private readonly partials = new Map<number, (t: string) => void>();
  private failure: Error | undefined;

  constructor(workers: number, modelDir = POCKETSPHINX_MODEL_DIR) {
    if (!existsSync(`${modelDir}/en-us.lm.bin`)) {
      throw new Error(`no PocketSphinx model in ${modelDir}: install the Debian packages pocketsphinx and pocketsphinx-en-us`);
    }
    for (let i = 0; i < workers; i++) this.workers.push(this.spawn(modelDir));
  }

  private spawn(modelDir: string) {
    const worker = new Worker(new URL('./pocketsphinxWorker.entry.mjs', import.meta.url), { workerData: { modelDir } });
    worker.unref();
    let settle: () => void = () => {};
    const ready = new Promise<void>((resolve) => (settle = resolve));
    worker.on('exit', () => settle());
    worker.on('message', (m: WorkerReply) => {
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
    worker.on('error', (err) => {
      this.failure = err;
      for (const f of this.finals.values()) f.reject(err);
      this.finals.clear();
    });
    return { worker, ready, active: 0 };
  }

  start(onPartial?: (text: string) => void): Utterance {
    const id = this.nextId++;
    const slot = this.workers.reduce((a, b) => (b.active < a.active ? b : a));
    slot.active++;
    let released = false;
    const release = () => {
      if (!released) slot.active--;
      released = true;
    };
    const post = (msg: WorkerRequest) => slot.worker.postMessage(msg);
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
        }).finally(release);
      },
      abort: () => {
        if (done) return;
        done = true;
        release();
        this.partials.delete(id);
        post({ op: 'abort', id });
      },
    };
  }

  async close(): Promise<void> {
    // Terminating a worker inside a native call (loading the model, decoding) aborts the process:
    // let it finish its current message and leave by itself; terminate only if it does not.
    await Promise.all(
      this.workers.map(async ({ worker, ready }) => {
        await Promise.race([ready, new Promise((r) => setTimeout(r, 20_000).unref())]);
        const exited = new Promise((r) => worker.once('exit', r));
        worker.postMessage({ op: 'shutdown' } satisfies WorkerRequest);
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
        await worker.terminate();
      }),
    );
  }
}
