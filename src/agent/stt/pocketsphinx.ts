// CMU PocketSphinx as a streaming Recognizer: a small pool of worker processes shared by every call
// (each stream costs about 0.3–0.4 of a core while the caller talks), a recognition going to the
// worker with the fewest in progress. A worker that dies is replaced: its recognitions fail with an
// error saying so, the other workers' carry on, and health() reports degraded until it is back.
// The workers are child processes (pocketsphinxProcess.ts), started once, not per call: killing one
// is safe at any moment, where terminating a worker thread inside a native call aborted the node.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { EngineHealth } from '../health.js';
import type { WorkerReply, WorkerRequest } from './pocketsphinxProcess.js';
import type { RecognitionStream, Recognizer } from './types.js';

const POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** The worker's module, as this one is run (TypeScript through tsx, whose loader the child inherits, or compiled). */
const WORKER_ENTRY = new URL(`./pocketsphinxProcess${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export interface PocketSphinxOptions {
  workers: number;
  modelDir?: string;
  /** The worker process's module; tests hand in one that can be made to die. */
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
  worker: ChildProcess;
  state: 'starting' | 'ready' | 'failed' | 'restarting';
  /** Why it is failed or restarting. */
  detail?: string;
  spawnedAt: number;
  /** Deaths in a row within a minute of being spawned (a crash loop backs off). */
  quickDeaths: number;
  recognitions: Map<number, Recognition>;
  lastError?: string;
  /** Set once the process has exited (or could not start). */
  exited: Promise<void>;
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
  /** The node exiting takes the workers with it (a worker still loading would linger until it is done). */
  private readonly killAll = () => {
    for (const slot of this.slots) slot.worker.kill('SIGKILL');
  };

  /** Throws when the model is not installed. */
  constructor(options: PocketSphinxOptions) {
    this.modelDir = options.modelDir ?? POCKETSPHINX_MODEL_DIR;
    this.entry = options.workerEntry ?? WORKER_ENTRY;
    if (!existsSync(`${this.modelDir}/en-us.lm.bin`)) {
      throw new Error(`no PocketSphinx model in ${this.modelDir}: install the Debian packages pocketsphinx and pocketsphinx-en-us`);
    }
    process.on('exit', this.killAll);
    for (let i = 0; i < options.workers; i++) this.slots.push(this.spawn(i, 0));
  }

  private spawn(index: number, quickDeaths: number): Slot {
    // Typed arrays (the audio) cross the channel as they are with the advanced serialization.
    const worker = fork(this.entry, [this.modelDir], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    let exit = () => {};
    const exited = new Promise<void>((resolve) => (exit = resolve));
    const slot: Slot = { worker, state: 'starting', spawnedAt: Date.now(), quickDeaths, recognitions: new Map(), exited };
    this.keepAlive(slot);
    worker.on('message', (m: WorkerReply) => {
      this.onMessage(slot, m);
      this.keepAlive(slot);
    });
    let gone = false;
    const onGone = (code: number | null, signal: NodeJS.Signals | null) => {
      if (gone) return;
      gone = true;
      exit();
      this.onExit(index, slot, signal ?? code ?? 0);
    };
    worker.on('error', (err) => {
      slot.lastError = err.message;
      // A process that never started emits no exit.
      if (worker.pid === undefined) onGone(null, null);
    });
    worker.on('exit', onGone);
    return slot;
  }

  /**
   * A worker keeps the node alive only while it owes a final transcript: idle or loading, it does not
   * (a node that is done exits, and takes its workers with it).
   */
  private keepAlive(slot: Slot): void {
    const owes = [...slot.recognitions.values()].some((r) => r.finishing);
    if (owes) {
      slot.worker.ref();
      slot.worker.channel?.ref();
    } else {
      slot.worker.unref();
      slot.worker.channel?.unref();
    }
  }

  private post(slot: Slot, msg: WorkerRequest): void {
    // A worker that is gone is told by its exit; a message to it is dropped.
    if (slot.worker.connected) slot.worker.send(msg);
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

  private onExit(index: number, slot: Slot, code: number | NodeJS.Signals): void {
    if (this.closing) return;
    const how = typeof code === 'number' ? `exit code ${code}` : `killed by ${code}`;
    const why = `speech recogniser worker ${index + 1} stopped (${how}${slot.lastError ? `: ${slot.lastError}` : ''})`;
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
    this.post(slot, { op: 'start', id });
    return this.stream(recognition, slot, id);
  }

  private stream(r: Recognition, slot?: Slot, id = 0): RecognitionStream {
    // Once the recognition failed or ended, its worker no longer knows it.
    const post = (msg: WorkerRequest) => {
      if (slot?.recognitions.get(id) === r) this.post(slot, msg);
    };
    let done = false;
    return {
      write: (pcm) => {
        // A view crosses to the worker with its whole buffer: a view of a larger one goes as a copy.
        if (!done) post({ op: 'audio', id, pcm: pcm.byteLength === pcm.buffer.byteLength ? pcm : pcm.slice() });
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
          if (slot) this.keepAlive(slot);
        });
      },
      abort: () => {
        if (done) return;
        done = true;
        post({ op: 'abort', id });
        slot?.recognitions.delete(id);
        if (slot) this.keepAlive(slot);
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

  /** Kills the workers, loading or not: a process can be stopped at any moment. */
  async close(): Promise<void> {
    this.closing = true;
    process.off('exit', this.killAll);
    for (const t of this.respawnTimers) clearTimeout(t);
    const closed = new Error('the speech recogniser was closed');
    await Promise.all(
      this.slots.map(async (slot) => {
        for (const r of slot.recognitions.values()) r.finishing?.reject(closed);
        slot.recognitions.clear();
        // Its exit is awaited: the process must not end before it (an unref'd child would let it).
        slot.worker.ref();
        slot.worker.kill('SIGKILL');
        await slot.exited;
      }),
    );
  }
}
