// Every call leaves a conversation record: who opened it, with what params, how it went and ended.
import type { Db } from './db.js';

export type ConversationState = 'connecting' | 'active' | 'ended' | 'failed';

export interface ConversationRecord {
  id: string;
  apiKeyId: string;
  endUser: string | null;
  params: Record<string, unknown>;
  state: ConversationState;
  endReason: string | null;
  createdAt: string;
  connectedAt: string | null;
  endedAt: string | null;
}

export class ConversationStore {
  constructor(private readonly db: Db) {}

  async create(rec: { id: string; apiKeyId: string; endUser: string | null; params: object }): Promise<void> {
    await this.db
      .insertInto('conversations')
      .values({
        id: rec.id,
        api_key_id: rec.apiKeyId,
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
      endUser: row.end_user,
      params: JSON.parse(row.params) as Record<string, unknown>,
      state: row.state as ConversationState,
      endReason: row.end_reason,
      createdAt: row.created_at,
      connectedAt: row.connected_at,
      endedAt: row.ended_at,
    };
  }
}
