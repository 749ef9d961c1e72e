// Keeps per-request key checks off the database: each node trusts what it read for KEY_CACHE_TTL_MS,
// so a revocation (from any node or the CLI) takes effect within that time. Last-use times are
// written in batches rather than once per request. While the database is unavailable, what was
// read within KEY_CACHE_STALE_MS keeps being served (stale-if-error, as HTTP caches do).
import { StoreUnavailable } from '../storage/unavailable.js';
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
  get(key: string, now: number, maxAgeMs = this.ttlMs): T | undefined {
    const e = this.entries.get(key);
    if (e && now - e.at < maxAgeMs) return e.value;
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
  /**
   * Presented key → key id (null: unknown or revoked). Keyed by the key itself, not its hash: the
   * peppered HMAC is the costliest step of a cached check, and this memory holds keys only as long
   * as a request's headers do anyway (bounded, forgotten on invalidate).
   */
  private readonly byKey: TtlMap<string | null>;
  private readonly activeById: TtlMap<boolean>;
  private readonly used = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  /**
   * After the store failed, it is asked again from then on, or as soon as it is seen answering
   * again: while it is down, requests are not each made to wait for it.
   */
  private storeRetryAt = 0;

  constructor(
    private readonly store: ApiKeyStore,
    ttlMs: number,
    private readonly staleMs: number,
    /** Whether the database answered its latest query (any caller's). */
    private readonly storeAvailability: { readonly up: boolean },
    private readonly flushEveryMs = 5000,
  ) {
    this.byKey = new TtlMap(ttlMs);
    this.activeById = new TtlMap(ttlMs);
  }

  start(): void {
    this.flushTimer = setInterval(() => void this.flush(), this.flushEveryMs);
    this.flushTimer.unref();
  }

  /**
   * The answer of this node's cached view, without waiting: the id of the active key `key`, null
   * (unknown or revoked), or undefined when the store must be asked (`authenticate`). Records the use.
   */
  cachedKeyId(key: string): string | null | undefined {
    const now = Date.now();
    const id = this.byKey.get(key, now);
    if (!id) return id;
    const active = this.activeById.get(id, now);
    if (active === undefined) return undefined;
    if (!active) return null;
    this.used.add(id);
    return id;
  }

  /** The id of the active key `key`, or null. Records the use. */
  async authenticate(key: string): Promise<string | null> {
    const cached = this.cachedKeyId(key);
    if (cached !== undefined) return cached;
    const answer = await this.ask(
      async () => (await this.store.findActiveByKey(key))?.id ?? null,
      () => {
        const id = this.byKey.get(key, Date.now(), this.staleMs);
        if (!id) return id;
        const active = this.activeById.get(id, Date.now(), this.staleMs);
        return active === undefined ? undefined : active ? id : null;
      },
    );
    const id = answer.value;
    if (answer.fresh) {
      const now = Date.now();
      this.byKey.set(key, id, now);
      if (id) this.activeById.set(id, true, now);
    }
    if (id) this.used.add(id);
    return id;
  }

  /** Whether key `id` is active by this node's cached view, or undefined when the store must be asked. */
  cachedIsActive(id: string): boolean | undefined {
    return this.activeById.get(id, Date.now());
  }

  async isActive(id: string): Promise<boolean> {
    let active = this.cachedIsActive(id);
    if (active === undefined) {
      const answer = await this.ask(
        () => this.store.isActive(id),
        () => this.activeById.get(id, Date.now(), this.staleMs),
      );
      active = answer.value;
      if (answer.fresh) this.activeById.set(id, active, Date.now());
    }
    return active;
  }

  /**
   * The store's answer; while the store is unavailable, the stale cached answer if there is one,
   * else StoreUnavailable.
   */
  private async ask<T>(fromStore: () => Promise<T>, stale: () => T | undefined): Promise<{ value: T; fresh: boolean }> {
    let failure: StoreUnavailable;
    if (!this.storeAvailability.up && Date.now() < this.storeRetryAt) {
      failure = new StoreUnavailable('database', 'recently unreachable');
    } else {
      try {
        return { value: await fromStore(), fresh: true };
      } catch (err) {
        if (!(err instanceof StoreUnavailable)) throw err;
        failure = err;
        this.storeRetryAt = Date.now() + 1000;
      }
    }
    const value = stale();
    if (value === undefined) throw failure;
    return { value, fresh: false };
  }

  /** Forget cached state (after a local revocation, or a notice from another node). */
  invalidate(): void {
    this.byKey.clear();
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
