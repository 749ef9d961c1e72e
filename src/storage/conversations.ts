// Every call leaves a conversation record: who opened it, with what params, how it went and ended;
// with history on, its turns too (shared by the calls that resume it).
import type { Db } from './db.js';

export type ConversationState = 'connecting' | 'active' | 'ended' | 'failed';

export interface ConversationRecord {
  id: string;
  apiKeyId: string;
  threadId: string;
  endUser: string | null;
  params: Record<string, unknown>;
  state: ConversationState;
  endReason: string | null;
  createdAt: string;
  connectedAt: string | null;
  endedAt: string | null;
}

export interface StoredTurn {
  role: 'user' | 'assistant';
  text: string;
  createdAt: string;
}

export class ConversationStore {
  constructor(private readonly db: Db) {}

  async create(rec: { id: string; apiKeyId: string; threadId: string; endUser: string | null; params: object }): Promise<void> {
    await this.db
      .insertInto('conversations')
      .values({
        id: rec.id,
        api_key_id: rec.apiKeyId,
        thread_id: rec.threadId,
        end_user: rec.endUser,
        params: JSON.stringify(rec.params),
        state: 'connecting',
        end_reason: null,
        created_at: new Date().toISOString(),
        connected_at: null,
        ended_at: null,
      })
      .execute();
  }

  async markActive(id: string): Promise<void> {
    await this.db
      .updateTable('conversations')
      .set({ state: 'active', connected_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('state', '=', 'connecting')
      .execute();
  }

  async updateParams(id: string, params: object): Promise<void> {
    await this.db.updateTable('conversations').set({ params: JSON.stringify(params) }).where('id', '=', id).execute();
  }

  /** Records the end once: later calls for the same conversation change nothing. */
  async finish(id: string, state: 'ended' | 'failed', reason: string): Promise<void> {
    await this.db
      .updateTable('conversations')
      .set({ state, end_reason: reason, ended_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('state', 'in', ['connecting', 'active'])
      .execute();
  }

  async get(id: string): Promise<ConversationRecord | null> {
    const row = await this.db.selectFrom('conversations').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return null;
    return {
      id: row.id,
      apiKeyId: row.api_key_id,
      threadId: row.thread_id,
      endUser: row.end_user,
      params: JSON.parse(row.params) as Record<string, unknown>,
      state: row.state as ConversationState,
      endReason: row.end_reason,
      createdAt: row.created_at,
      connectedAt: row.connected_at,
      endedAt: row.ended_at,
    };
  }

  async turns(threadId: string): Promise<StoredTurn[]> {
    const rows = await this.db.selectFrom('conversation_items').selectAll().where('thread_id', '=', threadId).orderBy('seq').execute();
    return rows.map((r) => ({ role: r.role as StoredTurn['role'], text: r.text, createdAt: r.created_at }));
  }

  async addTurn(threadId: string, seq: number, role: StoredTurn['role'], text: string): Promise<void> {
    await this.db
      .insertInto('conversation_items')
      .values({ thread_id: threadId, seq, role, text, created_at: new Date().toISOString() })
      .execute();
  }
}
