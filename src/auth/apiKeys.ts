// Permanent server API keys: generated once, shown once, stored only as a peppered HMAC.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { API_KEY_PREFIX } from '../config/apiKeyFormat.js';
import type { Db } from '../storage/db.js';
import { randomBase62 } from '../system/ids.js';

export interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** Whether its calls are recorded: 'on', 'off', or null for the server's RECORDING. */
  recording: RecordingChoice | null;
}

export type RecordingChoice = 'on' | 'off';

export function hashApiKey(pepper: string, key: string): string {
  return createHmac('sha256', pepper).update(key).digest('hex');
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
      recording: null,
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

  /** What happened: revoking twice keeps the first revocation time and says so. */
  async revoke(id: string): Promise<'revoked' | 'already-revoked' | 'unknown'> {
    const existing = await this.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('id', '=', id).executeTakeFirst();
    if (!existing) return 'unknown';
    if (existing.revoked_at) return 'already-revoked';
    await this.db.updateTable('api_keys').set({ revoked_at: new Date().toISOString() }).where('id', '=', id).execute();
    return 'revoked';
  }

  /** Sets whether key `id`'s calls are recorded (null: as the server's RECORDING says); false for an unknown key. */
  async setRecording(id: string, choice: RecordingChoice | null): Promise<boolean> {
    const result = await this.db.updateTable('api_keys').set({ recording: choice }).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Key `id`'s own recording choice (null: none, or no such key). */
  async recordingOf(id: string): Promise<RecordingChoice | null> {
    const row = await this.db.selectFrom('api_keys').select('recording').where('id', '=', id).executeTakeFirst();
    return row?.recording === 'on' || row?.recording === 'off' ? row.recording : null;
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

  /** The ids among `ids` that are revoked or no longer exist (live calls under them must end). */
  async revokedAmong(ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const rows = await this.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('id', 'in', ids).execute();
    const active = new Set(rows.filter((r) => !r.revoked_at).map((r) => r.id));
    return ids.filter((id) => !active.has(id));
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
  recording: string | null;
}): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    recording: row.recording === 'on' || row.recording === 'off' ? row.recording : null,
  };
}
