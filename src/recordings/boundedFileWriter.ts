// Appends buffers to a new file in order, in the background, holding at most `maxQueuedBytes` not
// yet written: a disk slower than the audio fails the file instead of growing memory. The first
// failure (opening, writing, too slow) stops every later write and is reported once.
import { open, type FileHandle } from 'node:fs/promises';

export class BoundedFileWriter {
  private readonly file: Promise<FileHandle>;
  private chain: Promise<unknown>;
  private queued = 0;
  private failure: Error | undefined;

  constructor(
    path: string,
    private readonly maxQueuedBytes: number,
    private readonly onFailure: (err: Error) => void,
  ) {
    this.file = open(path, 'w', 0o600);
    this.chain = this.file.catch((err: Error) => this.fail(err));
  }

  get failed(): boolean {
    return this.failure !== undefined;
  }

  write(bytes: Buffer): void {
    if (this.failure) return;
    if (this.queued + bytes.length > this.maxQueuedBytes) {
      return this.fail(new Error(`the disk is too slow: more than ${this.maxQueuedBytes} bytes wait to be written`));
    }
    this.queued += bytes.length;
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      try {
        await (await this.file).write(bytes);
      } catch (err) {
        this.fail(err as Error);
      } finally {
        this.queued -= bytes.length;
      }
    });
  }

  /** Resolves once everything queued is written (or dropped after a failure) and the file is closed. */
  async close(): Promise<void> {
    await this.chain;
    const handle = await this.file.catch(() => undefined);
    await handle?.close().catch((err: Error) => this.fail(err));
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.onFailure(err);
  }
}
