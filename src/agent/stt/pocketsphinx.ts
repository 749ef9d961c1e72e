// CMU PocketSphinx as a streaming Recognizer: a small pool of worker threads shared by every call
// (each stream costs about 0.3–0.4 of a core while the caller talks), a recognition going to the
// worker with the fewest in progress. A worker that dies is replaced: its recognitions fail with an
// error saying so, the other workers' carry on, and health() reports degraded until it is back.
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { EngineHealth } from '../health.js';
import type { WorkerReply, WorkerRequest } from './pocketsphinxWorker.js';
import type { RecognitionStream, Recognizer } from './types.js';

const POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** The worker's module: compiled, the worker itself; through tsx, an entry that registers tsx first
 * (worker threads do not inherit its loader). */
const WORKER_ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('./pocketsphinxWorker.entry.mjs', import.meta.url)
  : new URL('./pocketsphinxWorker.js', import.meta.url);

export interface PocketSphinxOptions {
  workers: number;
  modelDir?: string;
  /** The worker thread's entry module; tests hand in one that can be made to die. */
  workerEntry?: URL;
}

interface Recognition {
  onPartial?: (text: string) => void;
  lastPartial: string;
  finishing?: { resolve: (text: string) => void; reject: (err: Error) => void };
  /** Why it can no longer finish (its worker died). */
  failure?: Error;
}

interface Slot {
  worker: Worker;
  state: 'starting' | 'ready' | 'failed' | 'restarting';
  /** Why it is failed or restarting. */
  detail?: string;
  spawnedAt: number;
  /** Deaths in a row within a minute of being spawned (a crash loop backs off). */
  quickDeaths: number;
  recognitions: Map<number, Recognition>;
  lastError?: string;
  /** Settles when the worker has loaded its model, failed to, or exited. */
  settled: Promise<void>;
}

/** A replacement for a worker that dies within this long of its start waits longer each time. */
const QUICK_DEATH_MS = 60_000;
const MAX_RESPAWN_DELAY_MS = 30_000;

export class PocketSphinxRecognizer implements Recognizer {
  readonly name = 'pocketsphinx';
  private readonly slots: Slot[] = [];
  private readonly modelDir: string;
  private readonly entry: URL;
  private nextId = 1;
  private closing = false;
  private readonly respawnTimers = new Set<NodeJS.Timeout>();

  /** Throws when the model is not installed. */
  constructor(options: PocketSphinxOptions) {
    this.modelDir = options.modelDir ?? POCKETSPHINX_MODEL_DIR;
    this.entry = options.workerEntry ?? WORKER_ENTRY;
    if (!existsSync(`${this.modelDir}/en-us.lm.bin`)) {
      throw new Error(`no PocketSphinx model in ${this.modelDir}: install the Debian packages pocketsphinx and pocketsphinx-en-us`);
    }
    for (let i = 0; i < options.workers; i++) this.slots.push(this.spawn(i, 0));
  }

  private spawn(index: number, quickDeaths: number): Slot {
    const worker = new Worker(this.entry, { workerData: { modelDir: this.modelDir } });
    worker.unref();
    let settle = () => {};
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const slot: Slot = { worker, state: 'starting', spawnedAt: Date.now(), quickDeaths, recognitions: new Map(), settled };
    worker.on('message', (m: WorkerReply) => {
      if (m.op === 'ready' || (m.op === 'error' && m.id === 0)) settle();
      this.onMessage(slot, m);
    });
    worker.on('error', (err) => (slot.lastError = err.message));
    worker.on('exit', (code) => {
      settle();
      this.onExit(index, slot, code);
    });
    return slot;
  }

  private onMessage(slot: Slot, m: WorkerReply): void {
    if (m.op === 'ready') {
      slot.state = 'ready';
      slot.detail = undefined;
      return;
    }
    if (m.op === 'error' && m.id === 0) {
      // The worker could not load the model: it stays idle and gets no recognitions.
      slot.state = 'failed';
      slot.detail = `the speech recogniser could not start: ${m.message}`;
      return;
    }
    const r = slot.recognitions.get(m.id);
    if (!r) return;
    if (m.op === 'partial') {
      if (m.text && m.text !== r.lastPartial) {
        r.lastPartial = m.text;
        r.onPartial?.(m.text);
      }
    } else if (m.op === 'final') {
      slot.recognitions.delete(m.id);
      r.finishing?.resolve(m.text);
    } else if (m.op === 'error') {
      slot.recognitions.delete(m.id);
      const err = new Error(`speech recogniser: ${m.message}`);
      r.failure = err;
      r.finishing?.reject(err);
    }
  }

  private onExit(index: number, slot: Slot, code: number): void {
    if (this.closing) return;
    const why = `speech recogniser worker ${index + 1} stopped (exit code ${code}${slot.lastError ? `: ${slot.lastError}` : ''})`;
    const err = new Error(`${why}; the recognition in progress there was lost`);
    for (const r of slot.recognitions.values()) {
      r.failure = err;
      r.finishing?.reject(err);
    }
    slot.recognitions.clear();
    slot.state = 'restarting';
    slot.detail = `${why}; restarting it`;
    const quickDeaths = Date.now() - slot.spawnedAt < QUICK_DEATH_MS ? slot.quickDeaths + 1 : 0;
    const delay = quickDeaths <= 1 ? 0 : Math.min(MAX_RESPAWN_DELAY_MS, 1000 * 2 ** (quickDeaths - 2));
    const timer = setTimeout(() => {
      this.respawnTimers.delete(timer);
      if (!this.closing) this.slots[index] = this.spawn(index, quickDeaths);
    }, delay);
    timer.unref();
    this.respawnTimers.add(timer);
  }

  start(): RecognitionStream {
    const recognition: Recognition = { lastPartial: '' };
    const usable = this.slots.filter((s) => s.state === 'ready' || s.state === 'starting');
    if (!usable.length) {
      recognition.failure = new Error(`speech recognition is unavailable: ${this.health().detail ?? 'no worker is running'}`);
      return this.stream(recognition);
    }
    const slot = usable.reduce((a, b) => (b.recognitions.size < a.recognitions.size ? b : a));
    const id = this.nextId++;
    slot.recognitions.set(id, recognition);
    slot.worker.postMessage({ op: 'start', id } satisfies WorkerRequest);
    return this.stream(recognition, slot, id);
  }

  private stream(r: Recognition, slot?: Slot, id = 0): RecognitionStream {
    // Once the recognition failed or ended, its worker no longer knows it.
    const post = (msg: WorkerRequest) => {
      if (slot?.recognitions.get(id) === r) slot.worker.postMessage(msg);
    };
    let done = false;
    return {
      write: (pcm) => {
        if (!done) post({ op: 'audio', id, pcm });
      },
      onPartial: (cb) => {
        r.onPartial = cb;
      },
      finish: () => {
        if (done) return Promise.reject(new Error('the recognition was already finished or aborted'));
        done = true;
        if (r.failure) return Promise.reject(r.failure);
        return new Promise<string>((resolve, reject) => {
          r.finishing = { resolve, reject };
          post({ op: 'end', id });
        });
      },
      abort: () => {
        if (done) return;
        done = true;
        post({ op: 'abort', id });
        slot?.recognitions.delete(id);
      },
    };
  }

  health(): EngineHealth {
    const ready = this.slots.filter((s) => s.state === 'ready').length;
    if (ready === this.slots.length) return { state: 'ready' };
    const trouble = this.slots.find((s) => s.state === 'failed' || s.state === 'restarting');
    if (!trouble) return { state: 'starting', detail: 'loading the PocketSphinx model' };
    const detail = `${trouble.detail} (${ready} of ${this.slots.length} workers ready)`;
    if (ready > 0 || this.slots.some((s) => s.state === 'restarting' || s.state === 'starting')) return { state: 'degraded', detail };
    return { state: 'failed', detail };
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.respawnTimers) clearTimeout(t);
    const closed = new Error('the speech recogniser was closed');
    await Promise.all(
      this.slots.map(async (slot) => {
        for (const r of slot.recognitions.values()) r.finishing?.reject(closed);
        slot.recognitions.clear();
        // Terminating a worker inside a native call (loading the model, decoding) aborts the process:
        // let it finish its current message and leave by itself; terminate only if it does not.
        // Meanwhile the worker keeps the process alive (it is unref'd while it serves).
        slot.worker.ref();
        await Promise.race([slot.settled, new Promise((r) => setTimeout(r, 20_000).unref())]);
        const exited = new Promise((r) => slot.worker.once('exit', r));
        slot.worker.postMessage({ op: 'shutdown' } satisfies WorkerRequest);
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
        await slot.worker.terminate();
      }),
    );
  }
}
