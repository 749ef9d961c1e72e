// One query layer (Kysely) over the embedded SQLite file or PostgreSQL, chosen by DATABASE_URL.
// Every query goes through a guard that turns "the database cannot answer now" into StoreUnavailable
// and keeps track of whether the database answers, for /readyz and the node sweeper.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  Kysely,
  PostgresDialect,
  SqliteDialect,
  sql,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type TransactionSettings,
} from 'kysely';
import { StoreUnavailable, isDatabaseUnavailable } from './unavailable.js';

export interface ApiKeysTable {
  id: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Whether its calls are recorded: 'on', 'off', or null for the server's RECORDING. */
  recording: string | null;
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
  /** The node that carries (or carried) the call; null on records older than the nodes registry. */
  node_id: string | null;
  /** The call's usage at its end (JSON); null until it ended, or when its node was lost with it. */
  usage: string | null;
  /** The call's quality at its end (JSON); null as usage, or when it never connected. */
  quality: string | null;
  /** The call's recording: null (none), 'recording' (being written), 'complete', 'truncated' (stopped early at its cap or a low disk) or 'failed' (stopped by an error; what was written stays). */
  recording: string | null;
  /** The front door: webrtc, websocket or sip; null on records older than migration 0009. */
  transport: string | null;
  /** An outbound SIP call's final INVITE status (200, 486, 487…); null for every other call. */
  sip_status: number | null;
}

/** One row per Parley node (process identity, kept across restarts): its liveness and facts. */
export interface NodesTable {
  id: string;
  /** When the current incarnation started. */
  started_at: string;
  heartbeat_at: string;
  /** Set by a clean shutdown. */
  stopped_at: string | null;
  hostname: string;
  pid: number;
  version: string;
  /** Where the other nodes reach its node-to-node listener (http://host:port), null before it listens. */
  url: string | null;
  /** Calls it carries, as of its last heartbeat. */
  calls: number;
  /** Its MAX_CONCURRENT_CALLS. */
  max_calls: number;
  /** Its load figure (0-1, observability/nodeLoad.ts), as of its last heartbeat. */
  load: number;
  /** 1 while it takes new calls (under its LOAD_THRESHOLD), 0 above it. */
  accepting: number;
  /** Its SIP door's address for callers (host:port, UDP), null without one. */
  sip_address: string | null;
  /** The address its calls' media candidates carry (ICE_PUBLIC_IP, else ICE_BIND_ADDRESS), when known. */
  media_address: string | null;
}

export interface ConversationItemsTable {
  thread_id: string;
  /** Turn order within the conversation. */
  seq: number;
  role: string;
  text: string;
  created_at: string;
  /** The turn's picture as a thumbnail data URL (migration 0011); null without one. */
  image?: string | null;
}

export interface ClientSecretSessionsTable {
  /** The token's jti. */
  jti: string;
  /** The session (JSON) the call made with this token starts from. */
  session: string;
  /** Unix seconds; the row is useless after the token expires. */
  expires_at: number;
}

/** A console session logged out before its expiry (storage/consoleLogouts.ts). */
export interface ConsoleLogoutsTable {
  /** The session's id: the nonce of its cookie (never the cookie itself). */
  session_id: string;
  /** Unix seconds: the session's own expiry, after which the row is useless. */
  expires_at: number;
}

/** A SIP phone's registration (storage/sipBindings.ts): one row per address-of-record and contact. */
export interface SipBindingsTable {
  /** The registered user (of SIP_USERS). */
  aor: string;
  /** The Contact URI it registered. */
  contact: string;
  /** Where its REGISTER came from (`udp:host:port`, `tcp:…`, `tls:…`): a phone behind NAT is reached there. */
  source: string;
  call_id: string;
  cseq: number;
  /** Unix ms. */
  expires_at: number;
  user_agent: string | null;
  updated_at: string;
}

/** Where webhooks go: one row per API key's endpoint, and `global` for WEBHOOK_URL. */
export interface WebhookEndpointsTable {
  id: string;
  /** null for the global endpoint (every key's calls). */
  api_key_id: string | null;
  url: string;
  /** The whsec_ secret, encrypted at rest with a key derived from the pepper; '' for the global one (WEBHOOK_SECRET). */
  secret_enc: string;
  /** Comma-separated event types it receives. */
  events: string;
  created_at: string;
  /** Set when a receiver answered 410 Gone: nothing more is sent to it. */
  disabled_at: string | null;
}

/** One event for one endpoint, and its delivery so far (the outbox the dispatcher works from). */
export interface WebhookDeliveriesTable {
  id: string;
  /** The event's id (evt_…), the webhook-id header on every attempt. */
  event_id: string;
  event_type: string;
  api_key_id: string;
  endpoint_id: string;
  url: string;
  /** The JSON body, signed at each attempt. */
  payload: string;
  /** pending, delivered, failed (retries exhausted) or disabled (its endpoint answered 410 or was removed). */
  status: string;
  attempts: number;
  /** Unix ms. */
  next_attempt_at: number;
  /** Unix ms until which a node's claim on it holds (a crashed node's claim lapses). */
  lease_until: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface Database {
  api_keys: ApiKeysTable;
  signing_keys: SigningKeysTable;
  conversations: ConversationsTable;
  conversation_items: ConversationItemsTable;
  client_secret_sessions: ClientSecretSessionsTable;
  nodes: NodesTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  console_logouts: ConsoleLogoutsTable;
  sip_bindings: SipBindingsTable;
}

export type Db = Kysely<Database>;

/** Whether the database has been answering, from the outcome of every query. */
export class DbAvailability {
  private failure: { at: number; message: string } | undefined;
  /** Start of the current run of answered queries (the process start, or the end of the last outage). */
  upSince = Date.now();

  get up(): boolean {
    return !this.failure;
  }

  get lastError(): string | undefined {
    return this.failure?.message;
  }

  succeeded(): void {
    if (!this.failure) return;
    this.failure = undefined;
    this.upSince = Date.now();
  }

  failed(err: unknown): void {
    this.failure = { at: Date.now(), message: err instanceof Error ? err.message : String(err) };
  }
}

export interface OpenDatabase {
  db: Db;
  availability: DbAvailability;
  /** Asks the database to answer a trivial query; rejects with StoreUnavailable when it cannot. */
  probe(): Promise<void>;
}

export interface DatabaseLog {
  warn(obj: object, msg: string): void;
}

export async function openDatabase(url: string, log?: DatabaseLog): Promise<OpenDatabase> {
  const availability = new DbAvailability();
  const dialect = await dialectFor(url, log);
  const db = new Kysely<Database>({ dialect: new GuardedDialect(dialect, availability) });
  return {
    db,
    availability,
    probe: async () => void (await sql`select 1`.execute(db)),
  };
}

async function dialectFor(url: string, log?: DatabaseLog): Promise<Dialect> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    const { SQLite } = await import('./sqliteDriver.js');
    const onDisk = path !== ':memory:';
    if (onDisk) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      // Transcripts, end users' emails and key hashes: readable by this user only, from the start.
      closeSync(openSync(path, 'a', 0o600));
      chmodSync(path, 0o600);
    }
    const sqlite = new SQLite(path);
    // WAL lets the CLI write (keys create/revoke) while a server reads.
    sqlite.pragma('journal_mode = WAL');
    // SQLite makes its -wal and -shm files with the database file's mode (0600 above); older ones are mended.
    for (const extra of onDisk ? [`${path}-wal`, `${path}-shm`] : []) if (existsSync(extra)) chmodSync(extra, 0o600);
    // better-sqlite3 waits on the main thread: long enough for a CLI write, short enough not to
    // stall every call's audio behind a lock someone else holds.
    sqlite.pragma('busy_timeout = 1000');
    return new SqliteDialect({ database: sqlite });
  }
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // A database that is down or unreachable fails requests within seconds instead of holding them.
    connectionTimeoutMillis: 5000,
    query_timeout: 10_000,
    keepAlive: true,
  });
  // Connections die when the server stops, restarts or fails over, and a pg Client with no 'error'
  // listener then ends the process. The pool listens only while a client is idle; a client checked
  // out with no query running (between Kysely's acquire and its query, a migration's held
  // connection) had none. So every client gets its own listener for its whole life; the pool drops
  // a dead client at its release and connects anew on the next query.
  pool.on('connect', (client) => {
    client.on('error', (err) => log?.warn({ err: err.message }, 'PostgreSQL connection lost'));
  });
  // Still needed: the pool re-emits an idle client's error, and an unheard 'error' would throw.
  pool.on('error', () => {});
  return new PostgresDialect({ pool });
}

/** Wraps a dialect's driver so every query reports to `availability` and outages raise StoreUnavailable. */
class GuardedDialect implements Dialect {
  constructor(
    private readonly inner: Dialect,
    private readonly availability: DbAvailability,
  ) {}
  createDriver(): Driver {
    return new GuardedDriver(this.inner.createDriver(), this.availability);
  }
  createQueryCompiler() {
    return this.inner.createQueryCompiler();
  }
  createAdapter() {
    return this.inner.createAdapter();
  }
  createIntrospector(db: Kysely<any>) {
    return this.inner.createIntrospector(db);
  }
}

class GuardedDriver implements Driver {
  /** Our connection wrappers → the driver's own connections (drivers release by identity). */
  private readonly connections = new WeakMap<DatabaseConnection, DatabaseConnection>();

  constructor(
    private readonly driver: Driver,
    private readonly availability: DbAvailability,
  ) {}

  private async guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      const result = await run();
      this.availability.succeeded();
      return result;
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      this.availability.failed(err);
      throw new StoreUnavailable('database', err);
    }
  }

  private unwrap(connection: DatabaseConnection): DatabaseConnection {
    return this.connections.get(connection) ?? connection;
  }

  init(): Promise<void> {
    return this.guard(() => this.driver.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await this.guard(() => this.driver.acquireConnection());
    const wrapped: DatabaseConnection = {
      executeQuery: <R>(query: CompiledQuery) => this.guard(() => inner.executeQuery<R>(query)),
      streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => inner.streamQuery<R>(query, chunkSize),
    };
    this.connections.set(wrapped, inner);
    return wrapped;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.guard(() => this.driver.beginTransaction(this.unwrap(connection), settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.guard(() => this.driver.commitTransaction(this.unwrap(connection)));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.guard(() => this.driver.rollbackTransaction(this.unwrap(connection)));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.driver.releaseConnection(this.unwrap(connection));
  }

  destroy(): Promise<void> {
    return this.driver.destroy();
  }
}

/** What a store says about itself for /readyz. */
export interface StoreHealth {
  state: 'ready' | 'failed';
  detail?: string;
}

/** The database's readiness: a probe query, shared by concurrent askers. */
export function databaseHealth(database: OpenDatabase): { health(): Promise<StoreHealth> } {
  let inFlight: Promise<StoreHealth> | undefined;
  return {
    health: () =>
      (inFlight ??= database
        .probe()
        .then((): StoreHealth => ({ state: 'ready' }))
        .catch((): StoreHealth => ({ state: 'failed', detail: 'the database does not answer' }))
        .finally(() => (inFlight = undefined))),
  };
}
