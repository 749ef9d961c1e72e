// Schema migrations, applied at start by every process that opens the store (idempotent).
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './db.js';

const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'varchar(40)', (c) => c.primaryKey())
        .addColumn('name', 'varchar(200)', (c) => c.notNull())
        .addColumn('key_hash', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('prefix', 'varchar(40)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('last_used_at', 'varchar(32)')
        .addColumn('revoked_at', 'varchar(32)')
        .execute();
      await db.schema
        .createTable('signing_keys')
        .addColumn('kid', 'varchar(40)', (c) => c.primaryKey())
        .addColumn('secret_enc', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('retired_at', 'varchar(32)')
        .execute();
      await db.schema
        .createTable('conversations')
        .addColumn('id', 'varchar(48)', (c) => c.primaryKey())
        .addColumn('api_key_id', 'varchar(40)', (c) => c.notNull())
        // Calls that resume a conversation share its thread (and so its history).
        .addColumn('thread_id', 'varchar(48)', (c) => c.notNull())
        .addColumn('end_user', 'varchar(320)')
        .addColumn('params', 'text', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('end_reason', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('connected_at', 'varchar(32)')
        .addColumn('ended_at', 'varchar(32)')
        .execute();
      await db.schema.createIndex('conversations_api_key_id').on('conversations').column('api_key_id').execute();
      await db.schema
        .createTable('conversation_items')
        .addColumn('thread_id', 'varchar(48)', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('role', 'varchar(16)', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('conversation_items_pk', ['thread_id', 'seq'])
        .execute();
    },
  },
  '0002_client_secret_sessions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('client_secret_sessions')
        .addColumn('jti', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('session', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('client_secret_sessions_expires_at').on('client_secret_sessions').column('expires_at').execute();
    },
  },
  // Which node carries each call, and the nodes' heartbeats: a crashed node's calls are recorded
  // failed (node_lost) by its next start or by the other nodes. (0002 is main's
  // client_secret_sessions; migrations apply in name order.)
  '0003_nodes': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('nodes')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('started_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('heartbeat_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('stopped_at', 'varchar(32)')
        .addColumn('hostname', 'varchar(255)', (c) => c.notNull())
        .addColumn('pid', 'integer', (c) => c.notNull())
        .addColumn('version', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('nodes_heartbeat_at').on('nodes').column('heartbeat_at').execute();
      await db.schema.alterTable('conversations').addColumn('node_id', 'varchar(64)').execute();
      await db.schema.createIndex('conversations_node_state').on('conversations').columns(['node_id', 'state']).execute();
    },
  },
  // What a node needs to know to pass a call to another: where it listens, how full it is.
  '0004_node_capacity': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('nodes').addColumn('url', 'varchar(255)').execute();
      await db.schema.alterTable('nodes').addColumn('calls', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('nodes').addColumn('max_calls', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('nodes').addColumn('media_address', 'varchar(64)').execute();
    },
  },
  // Webhooks: the endpoints (per API key, and the global one) and the outbox of deliveries.
  '0005_webhooks': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_endpoints')
        .addColumn('id', 'varchar(48)', (c) => c.primaryKey())
        .addColumn('api_key_id', 'varchar(40)')
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('secret_enc', 'text', (c) => c.notNull())
        .addColumn('events', 'varchar(200)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('disabled_at', 'varchar(32)')
        .execute();
      await db.schema.createIndex('webhook_endpoints_api_key_id').on('webhook_endpoints').column('api_key_id').execute();
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('id', 'varchar(48)', (c) => c.primaryKey())
        .addColumn('event_id', 'varchar(48)', (c) => c.notNull())
        .addColumn('event_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('api_key_id', 'varchar(40)', (c) => c.notNull())
        .addColumn('endpoint_id', 'varchar(48)', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('last_status_code', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
      await db.schema.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'status']).execute();
    },
  },
  // A call's figures at its end (usage and quality, JSON), as the node that carried it measured them.
  '0006_call_figures': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('conversations').addColumn('usage', 'text').execute();
      await db.schema.alterTable('conversations').addColumn('quality', 'text').execute();
    },
  },
  // Call recordings: whether each key's calls are recorded (null: the server's RECORDING), and
  // whether each conversation has one.
  '0007_recordings': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('api_keys').addColumn('recording', 'varchar(8)').execute();
      await db.schema.alterTable('conversations').addColumn('recording', 'varchar(16)').execute();
    },
  },
  // The console lists every key's conversations newest first, a page at a time.
  '0008_conversations_created_at': {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('conversations_created_at').on('conversations').columns(['created_at', 'id']).execute();
    },
  },
  // The front door a call came through (webrtc, websocket, sip), for what is said of a call its node lost.
  '0009_conversations_transport': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('conversations').addColumn('transport', 'varchar(16)').execute();
    },
  },
  // Console sessions logged out before they expire, refused by every node (storage/consoleLogouts.ts).
  '0010_console_logouts': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('console_logouts')
        .addColumn('session_id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('console_logouts_expires_at').on('console_logouts').column('expires_at').execute();
    },
  },
  // Placement by load: each node's load figure, whether it takes calls (observability/nodeLoad.ts),
  // and where its SIP door listens (a full or loaded node redirects INVITEs there).
  '0011_node_load': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('nodes').addColumn('load', 'real', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('nodes').addColumn('accepting', 'integer', (c) => c.notNull().defaultTo(1)).execute();
      await db.schema.alterTable('nodes').addColumn('sip_address', 'varchar(255)').execute();
    },
  },
  // The SIP status an outbound call's INVITE ended with (486 busy, 487 unanswered…), on its record.
  '0012_sip_status': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('conversations').addColumn('sip_status', 'integer').execute();
    },
  },
  // SIP phones registered with the registrar (storage/sipBindings.ts), seen by every node.
  '0011_sip_bindings': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('sip_bindings')
        .addColumn('aor', 'varchar(64)', (c) => c.notNull())
        .addColumn('contact', 'varchar(512)', (c) => c.notNull())
        .addColumn('source', 'varchar(128)', (c) => c.notNull())
        .addColumn('call_id', 'varchar(256)', (c) => c.notNull())
        .addColumn('cseq', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('user_agent', 'varchar(200)')
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('sip_bindings_pkey', ['aor', 'contact'])
        .execute();
      await db.schema.createIndex('sip_bindings_expires_at').on('sip_bindings').column('expires_at').execute();
    },
  },
  // The picture a caller's turn showed the model (the camera's), as a small JPEG thumbnail data URL
  // (≈ 3–8 kB), for the console's conversation view.
  '0011_turn_images': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('conversation_items').addColumn('image', 'text').execute();
    },
  },
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

export async function migrate(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider, allowUnorderedMigrations: true }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message ?? error}`);
  }
}
