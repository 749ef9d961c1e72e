// Keeps recordings from filling their disk: while calls are recorded, the free space of their
// directory's file system is looked at every few seconds (and as each recording starts); below the
// minimum (RECORDING_MIN_FREE_BYTES) every recording stops, closed as a valid file, and the calls
// go on. A disk that fills between two looks still stops a recording, as a failed write.
import { statfs } from 'node:fs/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { CallRecorder } from './callRecorder.js';

const LOOK_EVERY_MS = 5000;

/** Bytes free for this process on the file system holding `dir`. */
export type FreeSpace = (dir: string) => Promise<number>;

const freeSpace: FreeSpace = async (dir) => {
  const fs = await statfs(dir);
  return fs.bavail * fs.bsize;
};

export class DiskGuard {
  private readonly recorders = new Set<CallRecorder>();
  private timer: NodeJS.Timeout | undefined;
  private low = false;

  constructor(
    private readonly dir: string,
    /** 0: no guard. */
    private readonly minFreeBytes: number,
    private readonly log: FastifyBaseLogger,
    private readonly free: FreeSpace = freeSpace,
  ) {}

  /** Watches `recorder` until it stops; stopped at once when the disk was low at the last look. */
  watch(recorder: CallRecorder): void {
    if (!this.minFreeBytes) return;
    this.recorders.add(recorder);
    if (this.low) recorder.stop('low_disk');
    void this.look();
    if (!this.timer) {
      this.timer = setInterval(() => void this.look(), LOOK_EVERY_MS);
      this.timer.unref();
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Looks at the free space: below the minimum, every recording stops. Resolves once done. */
  async look(): Promise<void> {
    for (const r of this.recorders) if (r.done) this.recorders.delete(r);
    if (!this.recorders.size) {
      // Looked at again as the next recording starts.
      this.low = false;
      return this.stop();
    }
    let free: number;
    try {
      free = await this.free(this.dir);
    } catch (err) {
      return void this.log.warn({ err, dir: this.dir }, 'free space of the recordings disk unknown');
    }
    const wasLow = this.low;
    this.low = free < this.minFreeBytes;
    if (this.low && !wasLow) this.log.warn({ dir: this.dir, freeBytes: free, minFreeBytes: this.minFreeBytes }, 'recordings disk low: recordings stop until space is freed');
    if (this.low) for (const r of this.recorders) r.stop('low_disk');
  }
}
