// Permanent server API keys: generated once, shown once, stored only as a peppered HMAC.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../storage/db.js';
import { randomBase62 } from './ids.js';

export const API_KEY_PREFIX = 'sk_parley_ai_';
const API_KEY_PATTERN = /^sk_parley_ai_[0-9A-Za-z]{32,128}$/;

export interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export function hashApiKey(pepper: string, key: string): string {
  return createHmac('sha256', pepper).update(key).digest('hex');
}

export function looksLikeApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

export class ApiKeyStore {
  constructor(
    private readonly db: Db,
    private readonly pepper: string,
  ) {}

  hash(key: string): string {
    return hashApiKey(this.pepper, key);
  }

  /** Creates a key and returns it in clear: the only time it exists outside the caller's hands. */
  async create(name: string): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = API_KEY_PREFIX + randomBase62(40);
    const row = {
      id: 'key_' + randomBase62(16),
      name,
      key_hash: this.hash(key),
      prefix: key.slice(0, API_KEY_PREFIX.length + 4),
      created_at: new Date().toISOString(),
      last_used_at: null,
      revoked_at: null,
    };
    await this.db.insertInto('api_keys').values(row).execute();
    return { key, record: toRecord(row) };
  }

  async list(): Promise<ApiKeyRecord[]> {
    const rows = await this.db.selectFrom('api_keys').selectAll().orderBy('created_at').execute();
    return rows.map(toRecord);
  }

  async count(): Promise<number> {
    const row = await this.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** Returns false when no such key exists. Revoking twice keeps the first revocation time. */
  async revoke(id: string): Promise<boolean> {
    const existing = await this.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('id', '=', id).executeTakeFirst();
    if (!existing) return false;
    if (!existing.revoked_at) {
      await this.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', id).execute();
    }
    return true;
  }

  /** Looks a presented key up by its hash; the final comparison is constant-time. */
  async findActiveByKey(key: string): Promise<{ id: string } | null> {
    const hash = this.hash(key);
    const row = await this.db
      .selectFrom('api_keys')
      .select(['id', 'key_hash', 'revoked_at'])
      .where('key_hash', '=', hash)
      .executeTakeFirst();
    if (!row || row.revoked_at) return null;
    if (!timingSafeEqual(Buffer.from(row.key_hash, 'hex'), Buffer.from(hash, 'hex'))) return null;
    return { id: row.id };
  }

  async isActive(id: string): Promise<boolean> {
    const row = await this.db.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirst();
    return !!row && !row.revoked_at;
  }

  async touch(ids: string[], at: string): Promise<void> {
    if (ids.length) await this.db.updateTable('api_keys').set({ last_used_at: at }).where('id', 'in', ids).execute();
  }
}

function toRecord(row: {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}
