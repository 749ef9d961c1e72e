// Which calls are recorded (the server's RECORDING, unless the API key chose for itself), where
// their files are (RECORDING_DIR, one `<conversation id>.opus` each), how large they may grow
// (RECORDING_MAX_BYTES, RECORDING_MIN_FREE_BYTES: diskGuard.ts), and their deletion after
// RECORDING_RETENTION_DAYS.
import { mkdirSync } from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { RecordingChoice } from '../auth/apiKeys.js';
import type { RecordingStopReason } from '../session/events.js';
import { CallRecorder } from './callRecorder.js';
import { DiskGuard, type FreeSpace } from './diskGuard.js';

export interface RecordingSettings {
  /** RECORDING=on: calls are recorded unless their key says off. */
  byDefault: boolean;
  dir: string;
  /** 0: kept for ever. */
  retentionDays: number;
  /** One recording's file size at most. */
  maxBytes: number;
  /** Free space the recordings' disk keeps (0: no guard). */
  minFreeBytes: number;
}

const SWEEP_EVERY_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;
/** A conversation id (a prefix and base64url: letters, digits, `_` and `-`) and `.opus`; nothing that names another directory. */
const FILE_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_-]*\.opus$/;

export class Recordings {
  private sweeper: NodeJS.Timeout | undefined;
  private dirMade = false;
  private readonly disk: DiskGuard;

  constructor(
    private readonly settings: RecordingSettings,
    /** An API key's own choice (null: none). */
    private readonly choiceOf: (apiKeyId: string) => Promise<RecordingChoice | null>,
    private readonly log: FastifyBaseLogger,
    freeSpace?: FreeSpace,
  ) {
    this.disk = new DiskGuard(settings.dir, settings.minFreeBytes, log, freeSpace);
  }

  get dir(): string {
    return this.settings.dir;
  }

  /** Whether key `apiKeyId`'s next call is recorded. */
  async wanted(apiKeyId: string): Promise<boolean> {
    const choice = await this.choiceOf(apiKeyId);
    return choice === null ? this.settings.byDefault : choice === 'on';
  }

  /** The recording file's name in `dir` for a conversation (null for an id that cannot have one). */
  fileName(conversationId: string): string | null {
    const name = `${conversationId}.opus`;
    return FILE_PATTERN.test(name) ? name : null;
  }

  /** Starts recording conversation `id` (its clock starts with recorder.start()); `stopped` is told if it stops before the call ends. */
  recorder(conversationId: string, stopped: (reason: RecordingStopReason) => void): CallRecorder {
    if (!this.dirMade) mkdirSync(this.settings.dir, { recursive: true, mode: 0o700 });
    this.dirMade = true;
    const recorder = new CallRecorder(join(this.settings.dir, this.fileName(conversationId)!), this.log, conversationId, { maxBytes: this.settings.maxBytes, stopped });
    this.disk.watch(recorder);
    return recorder;
  }

  /** Deletes old recordings now and every hour (nothing when they are kept for ever). */
  startRetention(): void {
    if (!this.settings.retentionDays || this.sweeper) return;
    const sweep = () => void this.deleteExpired().catch((err: Error) => this.log.error({ err }, 'old recordings not deleted'));
    sweep();
    this.sweeper = setInterval(sweep, SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  stop(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.disk.stop();
  }

  /** Deletes the recordings last written more than RECORDING_RETENTION_DAYS ago; resolves with how many. */
  async deleteExpired(now = Date.now()): Promise<number> {
    const before = now - this.settings.retentionDays * DAY_MS;
    let names: string[];
    try {
      names = await readdir(this.settings.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    let deleted = 0;
    for (const name of names.filter((n) => FILE_PATTERN.test(n))) {
      const path = join(this.settings.dir, name);
      // Another node sharing the directory may delete the same file first.
      const info = await stat(path).catch(() => undefined);
      if (!info || info.mtimeMs >= before) continue;
      if (await unlink(path).then(() => true, () => false)) deleted++;
    }
    if (deleted) this.log.info({ deleted, retentionDays: this.settings.retentionDays }, 'old recordings deleted');
    return deleted;
  }
}
