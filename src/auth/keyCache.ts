// Keeps per-request key checks off the database: each node trusts what it read for KEY_CACHE_TTL_MS,
// so a revocation (from any node or the CLI) takes effect within that time. Last-use times are
// written in batches rather than once per request.
import type { ApiKeyStore } from './apiKeys.js';

interface Entry<T> {
  value: T;
  at: number;
}

/** A small TTL map that forgets everything when it grows past its bound (no unbounded growth). */
class TtlMap<T> {
  private readonly entries = new Map<string, Entry<T>>();
  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}
  get(key: string, now: number): T | undefined {
    const e = this.entries.get(key);
    if (e && now - e.at < this.ttlMs) return e.value;
    return undefined;
  }
  set(key: string, value: T, now: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, at: now });
  }
  clear(): void {
    this.entries.clear();
  }
}

export class ApiKeyCache {
  private readonly byHash: TtlMap<string | null>;
  private readonly activeById: TtlMap<boolean>;
  private readonly used = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: ApiKeyStore,
    ttlMs: number,
    private readonly flushEveryMs = 5000,
  ) {
    this.byHash = new TtlMap(ttlMs);
    this.activeById = new TtlMap(ttlMs);
  }

  start(): void {
    this.flushTimer = setInterval(() => void this.flush(), this.flushEveryMs);
    this.flushTimer.unref();
  }

  /** The id of the active key `key`, or null. Records the use. */
  async authenticate(key: string): Promise<string | null> {
    const now = Date.now();
    const hash = this.store.hash(key);
    let id = this.byHash.get(hash, now);
    if (id === undefined) {
      id = (await this.store.findActiveByKey(key))?.id ?? null;
      this.byHash.set(hash, id, now);
      if (id) this.activeById.set(id, true, now);
    } else if (id && !(await this.isActive(id))) {
      id = null;
    }
    if (id) this.used.add(id);
    return id;
  }

  async isActive(id: string): Promise<boolean> {
    const now = Date.now();
    let active = this.activeById.get(id, now);
    if (active === undefined) {
      active = await this.store.isActive(id);
      this.activeById.set(id, active, now);
    }
    return active;
  }

  /** Forget cached state (after a local revocation, or a notice from another node). */
  invalidate(): void {
    this.byHash.clear();
    this.activeById.clear();
  }

  async flush(): Promise<void> {
    if (!this.used.size) return;
    const ids = [...this.used];
    this.used.clear();
    await this.store.touch(ids, new Date().toISOString()).catch(() => {
      for (const id of ids) this.used.add(id);
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.flushTimer);
    await this.flush();
  }
}
