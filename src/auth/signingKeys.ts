// HS256 signing secrets for ephemeral tokens. They live in the shared store (so every node signs and
// verifies alike), encrypted with a key derived from the pepper, and rotate without breaking live
// tokens: a retired secret still verifies until every token it signed has expired.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Db } from '../storage/db.js';
import { StoreUnavailable } from '../storage/unavailable.js';
import { randomId } from '../system/ids.js';

export interface SigningKey {
  kid: string;
  secret: Buffer;
  createdAt: string;
  retiredAt: string | null;
}

/** Tokens live at most 3600 s (+5 s skew): a retired secret is kept that long, then dropped. */
export const RETIRED_KEY_RETENTION_MS = (3600 + 5) * 1000;

export class SigningKeyStore {
  private readonly wrapKey: Buffer;
  private keys = new Map<string, SigningKey>();
  private active: SigningKey | undefined;
  private lastReload = 0;
  /** Why the last reload failed (the store was unavailable), until one succeeds. */
  private lastReloadError: unknown;

  constructor(
    private readonly db: Db,
    pepper: string,
    /** Whether the database answered its latest query (any caller's). */
    private readonly storeAvailability: { readonly up: boolean },
  ) {
    this.wrapKey = Buffer.from(hkdfSync('sha256', pepper, 'parley', 'signing-key-encryption', 32));
  }

  /** Loads the secrets, creating the first one on an empty store. */
  async init(): Promise<void> {
    await this.reload();
    if (!this.active) {
      await this.insertNew();
      await this.reload();
    }
  }

  get activeKey(): SigningKey {
    if (!this.active) throw new Error('signing keys not loaded');
    return this.active;
  }

  get(kid: string): SigningKey | undefined {
    return this.keys.get(kid);
  }

  /**
   * Re-reads the store at most once a second (another node may have rotated), or at once when the
   * last reload failed and the database has answered since. While the database is unavailable,
   * rejects with StoreUnavailable: without the store, an unknown key is unknowable, not absent.
   */
  async reloadIfStale(minIntervalMs = 1000): Promise<boolean> {
    const recovered = this.lastReloadError !== undefined && this.storeAvailability.up;
    if (Date.now() - this.lastReload >= minIntervalMs || recovered) {
      await this.reload();
      return true;
    }
    if (this.lastReloadError) throw this.lastReloadError;
    if (!this.storeAvailability.up) throw new StoreUnavailable('database', 'unreachable');
    return false;
  }

  async reload(): Promise<void> {
    this.lastReload = Date.now();
    const cutoff = new Date(Date.now() - RETIRED_KEY_RETENTION_MS).toISOString();
    let rows;
    try {
      rows = await this.db
        .selectFrom('signing_keys')
        .selectAll()
        .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', cutoff)]))
        .orderBy('created_at')
        .execute();
      this.lastReloadError = undefined;
    } catch (err) {
      this.lastReloadError = err;
      throw err;
    }
    const keys = new Map<string, SigningKey>();
    let active: SigningKey | undefined;
    for (const row of rows) {
      const key = { kid: row.kid, secret: this.unwrap(row.secret_enc), createdAt: row.created_at, retiredAt: row.retired_at };
      keys.set(key.kid, key);
      if (!key.retiredAt) active = key;
    }
    this.keys = keys;
    this.active = active;
  }

  /** Retires the active secret(s) and makes a new one; returns the new kid. */
  async rotate(): Promise<{ kid: string; retired: string[] }> {
    const now = new Date().toISOString();
    const current = await this.db.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).execute();
    await this.db.updateTable('signing_keys').set({ retired_at: now }).where('retired_at', 'is', null).execute();
    const kid = await this.insertNew();
    const cutoff = new Date(Date.now() - RETIRED_KEY_RETENTION_MS).toISOString();
    await this.db.deleteFrom('signing_keys').where('retired_at', '<', cutoff).execute();
    await this.reload();
    return { kid, retired: current.map((r) => r.kid) };
  }

  private async insertNew(): Promise<string> {
    const kid = randomId('sk-', 9).replace(/_/g, '-');
    await this.db
      .insertInto('signing_keys')
      .values({ kid, secret_enc: this.wrap(randomBytes(32)), created_at: new Date().toISOString(), retired_at: null })
      .execute();
    return kid;
  }

  private wrap(secret: Buffer): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.wrapKey, iv);
    const ct = Buffer.concat([cipher.update(secret), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  private unwrap(stored: string): Buffer {
    const [version, iv, tag, ct] = stored.split('.');
    if (version !== 'v1' || !iv || !tag || !ct) throw new Error('unreadable signing key in the store');
    const decipher = createDecipheriv('aes-256-gcm', this.wrapKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
    } catch {
      throw new Error('cannot decrypt the signing keys: API_KEY_PEPPER differs from the one they were stored with');
    }
  }
}
