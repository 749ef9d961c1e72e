// One query layer (Kysely) over the embedded SQLite file or PostgreSQL, chosen by DATABASE_URL.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';

export interface ApiKeysTable {
  id: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface SigningKeysTable {
  kid: string;
  /** The HS256 secret, encrypted at rest with a key derived from the pepper. */
  secret_enc: string;
  created_at: string;
  retired_at: string | null;
}

export interface ConversationsTable {
  id: string;
  api_key_id: string;
  thread_id: string;
  end_user: string | null;
  params: string;
  state: string;
  end_reason: string | null;
  created_at: string;
  connected_at: string | null;
  ended_at: string | null;
}

export interface ConversationItemsTable {
  thread_id: string;
  /** Turn order within the conversation. */
  seq: number;
  role: string;
  text: string;
  created_at: string;
}

export interface ClientSecretSessionsTable {
  /** The token's jti. */
  jti: string;
  /** The session (JSON) the call made with this token starts from. */
  session: string;
  /** Unix seconds; the row is useless after the token expires. */
  expires_at: number;
}

export interface Database {
  api_keys: ApiKeysTable;
  signing_keys: SigningKeysTable;
  conversations: ConversationsTable;
  conversation_items: ConversationItemsTable;
  client_secret_sessions: ClientSecretSessionsTable;
}

export type Db = Kysely<Database>;

export async function openDatabase(url: string): Promise<Db> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    const { default: SQLite } = await import('better-sqlite3');
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const sqlite = new SQLite(path);
    // WAL lets the CLI write (keys create/revoke) while a server reads.
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('busy_timeout = 5000');
    return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  }
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
