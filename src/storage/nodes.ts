// The nodes registry: one row per Parley node, with when its current incarnation started and when it
// last said it was alive. A node keeps its id across restarts (NODE_ID, or one generated into
// DATA_DIR), so that on start it can recognise the calls its earlier incarnation left unfinished.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Db, NodesTable } from './db.js';

/** Parley's version (package.json). */
export const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Facts a node reports with each heartbeat; other parts extend NodesTable and add theirs here. */
export type NodeFacts = Partial<Omit<NodesTable, 'id' | 'started_at' | 'heartbeat_at' | 'stopped_at'>>;

export class NodeStore {
  constructor(private readonly db: Db) {}

  /** Records the start of an incarnation of node `id` (a new row, or the row of its earlier one). */
  async register(id: string, facts: NodeFacts = {}): Promise<void> {
    const now = new Date().toISOString();
    const row = {
      started_at: now,
      heartbeat_at: now,
      stopped_at: null,
      hostname: hostname().slice(0, 255),
      pid: process.pid,
      version: VERSION,
      url: null,
      calls: 0,
      max_calls: 0,
      load: 0,
      accepting: 1,
      sip_address: null,
      media_address: null,
      ...facts,
    };
    await this.db
      .insertInto('nodes')
      .values({ id, ...row })
      .onConflict((oc) => oc.column('id').doUpdateSet(row))
      .execute();
  }

  async heartbeat(id: string, facts: NodeFacts = {}): Promise<void> {
    await this.db
      .updateTable('nodes')
      .set({ heartbeat_at: new Date().toISOString(), ...facts })
      .where('id', '=', id)
      .execute();
  }

  async markStopped(id: string): Promise<void> {
    await this.db.updateTable('nodes').set({ stopped_at: new Date().toISOString() }).where('id', '=', id).execute();
  }

  /** Nodes running (not stopped) that have heartbeated since `since`. */
  async live(since: string): Promise<NodesTable[]> {
    return this.db.selectFrom('nodes').selectAll().where('stopped_at', 'is', null).where('heartbeat_at', '>=', since).execute();
  }

  async get(id: string): Promise<NodesTable | undefined> {
    return this.db.selectFrom('nodes').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Forgets nodes silent since `before` (their calls were reconciled long ago). */
  async forgetSilentSince(before: string): Promise<void> {
    await this.db.deleteFrom('nodes').where('heartbeat_at', '<', before).execute();
  }
}

/** NODE_ID when set; otherwise an id generated once into <DATA_DIR>/node-id, so restarts keep it. */
export function loadOrCreateNodeId(dataDir: string, configured: string | undefined): string {
  if (configured) return configured;
  const file = join(dataDir, 'node-id');
  if (existsSync(file)) {
    const id = readFileSync(file, 'utf8').trim();
    if (id) return id;
  }
  mkdirSync(dataDir, { recursive: true });
  const id = `node_${randomBytes(8).toString('hex')}`;
  writeFileSync(file, id + '\n', { mode: 0o644 });
  return id;
}
