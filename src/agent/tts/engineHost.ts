// Runs the local speech engines' programs through one small helper process (engineProcess.ts),
// started with the engine (or on first use) and again if it dies, so that the node never forks itself per clause. At
// most `size` programs run at once for the whole node; further requests wait their turn in order
// of arrival, and one whose signal aborts leaves the queue or stops its program.
import { fork, type ChildProcess } from 'node:child_process';
import { Semaphore } from '../../system/semaphore.js';
import type { EngineAnswer, EngineRequest } from './engineProcess.js';

/** The helper's module, as this one is run (TypeScript through tsx, or compiled). */
const ENTRY = new URL(`./engineProcess${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

export class EngineHost {
  private readonly pool: Semaphore;
  private child: ChildProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (bytes: Buffer) => void; reject: (err: Error) => void }>();

  constructor(size: number) {
    this.pool = new Semaphore(size);
  }

  /** Starts the helper now rather than at the first clause (its start costs the node a fork). */
  start(): this {
    this.keepAlive(this.started());
    return this;
  }

  /** Runs `cmd` and resolves with its stdout, or with `outFile`'s bytes (the file is removed). */
  async run(cmd: string, args: string[], opts: { outFile?: string; signal?: AbortSignal } = {}): Promise<Buffer> {
    const { signal } = opts;
    const release = await this.pool.acquire(signal);
    try {
      return await this.send(cmd, args, opts.outFile, signal);
    } finally {
      release();
    }
  }

  close(): void {
    this.child?.kill();
    this.child = undefined;
  }

  private send(cmd: string, args: string[], outFile: string | undefined, signal: AbortSignal | undefined): Promise<Buffer> {
    signal?.throwIfAborted();
    const child = this.started();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onAbort = () => child.send({ id, abort: true } satisfies EngineRequest);
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        resolve: (bytes) => (done(), resolve(bytes)),
        // A stopped program answers with an error: the caller hears its own abort.
        reject: (err) => (done(), reject(signal?.aborted ? signal.reason : err)),
      });
      this.keepAlive(child);
      child.send({ id, cmd, args, ...(outFile ? { outFile } : {}) } satisfies EngineRequest);
    });
  }

  private started(): ChildProcess {
    if (this.child?.connected) return this.child;
    const child = fork(ENTRY, [], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.on('message', (answer: EngineAnswer) => {
      const waiter = this.pending.get(answer.id);
      if (!waiter) return;
      this.pending.delete(answer.id);
      if (answer.ok) waiter.resolve(Buffer.from(answer.bytes.buffer, answer.bytes.byteOffset, answer.bytes.byteLength));
      else waiter.reject(new Error(answer.message));
      this.keepAlive(child);
    });
    child.on('exit', (code, sig) => {
      if (this.child === child) this.child = undefined;
      for (const [id, waiter] of this.pending) {
        this.pending.delete(id);
        waiter.reject(new Error(`the speech engine process exited (${sig ?? code})`));
      }
    });
    child.on('error', () => {}); // an exit follows
    this.child = child;
    return child;
  }

  /** While it has work, the helper keeps this process alive (an answer is awaited); idle, it does not. */
  private keepAlive(child: ChildProcess): void {
    if (this.pending.size) {
      child.ref();
      child.channel?.ref();
    } else {
      child.unref();
      child.channel?.unref();
    }
  }
}
