// Every call leaves a conversation record: who opened it, with what params, on which node, how it
// went and ended; with history on, its turns too (shared by the calls that resume it).
import type { ConversationsTable, Db } from './db.js';
import { StoreUnavailable } from './unavailable.js';

export type ConversationState = 'connecting' | 'active' | 'ended' | 'failed';

/** A key's calls and what they used, summed (the console's keys page). */
export interface KeyUsage {
  calls: number;
  input_tokens: number;
  output_tokens: number;
  caller_audio_s: number;
  agent_audio_s: number;
}

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
  /** The node that carries (or carried) the call. */
  nodeId: string | null;
  recording: RecordingState | null;
  /** The front door it came through (webrtc, websocket, sip); null on old records. */
  transport: string | null;
  /** What its wire said of it, when it said anything (an outbound SIP call's final INVITE status); null otherwise. */
  outcome: RecordedOutcome | null;
  /** Its usage and quality at its end (calls/callFigures.ts); null before, or when none were recorded. */
  usage: Record<string, unknown> | null;
  quality: Record<string, unknown> | null;
}

/**
 * What a call's wire said of it, in its own terms (calls/transport.ts's WireOutcome): stored, and
 * shown in the API and webhooks, as `sip_status` for the one wire that says anything, SIP.
 */
export interface RecordedOutcome {
  wire: string;
  code: number;
}

/** The `sip_status` the API and webhooks show for an outcome: a SIP call's final INVITE status, else null. */
export function sipStatusOf(outcome: RecordedOutcome | null | undefined): number | null {
  return outcome?.wire === 'sip' ? outcome.code : null;
}

/** What a call measured of itself, recorded with its end. */
export interface RecordedFigures {
  usage: object;
  quality: object | null;
}

/** Where a page of conversations ends: its last one's creation time and id. */
export interface ConversationCursor {
  createdAt: string;
  id: string;
}

/** A call's recording: being written, finished, stopped early at its size cap or a low disk (a valid file), or stopped by an error (what was written stays). */
export type RecordingState = 'recording' | 'complete' | 'truncated' | 'failed';

export interface StoredTurn {
  role: 'user' | 'assistant';
  text: string;
  createdAt: string;
  /** The picture the turn showed the model, as a thumbnail data URL. */
  image?: string;
}

const UNFINISHED = ['connecting', 'active'];
/** Ends kept for a later write while the database is away (beyond it, the sweeper's node_lost tells). */
const MAX_UNWRITTEN_ENDS = 10_000;

interface UnwrittenEnd {
  state: 'ended' | 'failed';
  reason: string;
  endedAt: string;
  figures?: RecordedFigures;
  outcome?: RecordedOutcome;
}

export class ConversationStore {
  /** Call ends the database could not take when they happened, written once it answers again. */
  private readonly unwritten = new Map<string, UnwrittenEnd>();

  constructor(private readonly db: Db) {}

  async create(rec: { id: string; apiKeyId: string; threadId: string; endUser: string | null; params: object; nodeId: string; transport: string; recorded?: boolean }): Promise<void> {
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
        node_id: rec.nodeId,
        usage: null,
        quality: null,
        recording: rec.recorded ? 'recording' : null,
        transport: rec.transport,
      })
      .execute();
  }

  async setRecording(id: string, state: RecordingState): Promise<void> {
    await this.db.updateTable('conversations').set({ recording: state }).where('id', '=', id).execute();
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

  /**
   * Records the end once: later calls for the same conversation change nothing. While the database
   * is unavailable the end is kept (with its time) and written by `writeUnwrittenEnds`.
   */
  async finish(id: string, state: 'ended' | 'failed', reason: string, figures?: RecordedFigures, outcome?: RecordedOutcome): Promise<void> {
    const end: UnwrittenEnd = { state, reason, endedAt: new Date().toISOString(), ...(figures ? { figures } : {}), ...(outcome ? { outcome } : {}) };
    try {
      await this.writeEnd(id, end);
    } catch (err) {
      if (!(err instanceof StoreUnavailable) || this.unwritten.size >= MAX_UNWRITTEN_ENDS) throw err;
      this.unwritten.set(id, end);
    }
  }

  get unwrittenEnds(): number {
    return this.unwritten.size;
  }

  /** Writes the ends kept during an outage; resolves with how many were written. */
  async writeUnwrittenEnds(): Promise<number> {
    let written = 0;
    for (const [id, end] of this.unwritten) {
      await this.writeEnd(id, end);
      this.unwritten.delete(id);
      written++;
    }
    return written;
  }

  private async writeEnd(id: string, end: UnwrittenEnd): Promise<void> {
    await this.db
      .updateTable('conversations')
      .set({
        state: end.state,
        end_reason: end.reason,
        ended_at: end.endedAt,
        ...(sipStatusOf(end.outcome) === null ? {} : { sip_status: sipStatusOf(end.outcome) }),
        ...(end.figures ? { usage: JSON.stringify(end.figures.usage), quality: end.figures.quality && JSON.stringify(end.figures.quality) } : {}),
      })
      .where('id', '=', id)
      .where('state', 'in', UNFINISHED)
      .execute();
  }

  /** Marks failed the unfinished calls carried by `nodeId` (its earlier incarnation died with them). */
  async failCallsOfNode(nodeId: string, reason: string): Promise<ConversationRecord[]> {
    const rows = await this.db
      .updateTable('conversations')
      .set({ state: 'failed', end_reason: reason, ended_at: new Date().toISOString() })
      .where('node_id', '=', nodeId)
      .where('state', 'in', UNFINISHED)
      .returningAll()
      .execute();
    return rows.map(toRecord);
  }

  /**
   * Marks failed the unfinished calls of every node (but `exceptNodeId`) silent since `silentSince`;
   * resolves with them (each is returned to the one node whose update changed it).
   */
  async failCallsOfSilentNodes(silentSince: string, exceptNodeId: string, reason: string): Promise<ConversationRecord[]> {
    const rows = await this.db
      .updateTable('conversations')
      .set({ state: 'failed', end_reason: reason, ended_at: new Date().toISOString() })
      .where('state', 'in', UNFINISHED)
      .where('node_id', '!=', exceptNodeId)
      .where('node_id', 'in', (eb) => eb.selectFrom('nodes').select('id').where('heartbeat_at', '<', silentSince))
      .returningAll()
      .execute();
    return rows.map(toRecord);
  }

  async get(id: string): Promise<ConversationRecord | null> {
    const row = await this.db.selectFrom('conversations').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row) : null;
  }

  /**
   * Conversations of every key, newest first, `limit` at a time; with `after` (the last one of the
   * page before), the page that follows it, so pages stay put while new calls come in.
   */
  async list(limit: number, after?: ConversationCursor): Promise<ConversationRecord[]> {
    let query = this.db.selectFrom('conversations').selectAll();
    if (after) {
      query = query.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]));
    }
    const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(toRecord);
  }

  /**
   * Each key's usage summed over its calls that ended since `since` (ISO time): tokens, audio
   * seconds and calls. Reads at most `maxCalls` of the latest (the console's view, not billing).
   */
  async usageByKey(since: string, maxCalls = 50_000): Promise<Map<string, KeyUsage>> {
    const rows = await this.db
      .selectFrom('conversations')
      .select(['api_key_id', 'usage'])
      .where('ended_at', '>=', since)
      .orderBy('ended_at', 'desc')
      .limit(maxCalls)
      .execute();
    const out = new Map<string, KeyUsage>();
    for (const row of rows) {
      const sum = out.get(row.api_key_id) ?? { calls: 0, input_tokens: 0, output_tokens: 0, caller_audio_s: 0, agent_audio_s: 0 };
      out.set(row.api_key_id, sum);
      sum.calls += 1;
      if (row.usage === null) continue;
      const u = JSON.parse(row.usage) as Partial<Record<keyof KeyUsage, number>>;
      for (const field of ['input_tokens', 'output_tokens', 'caller_audio_s', 'agent_audio_s'] as const) sum[field] += typeof u[field] === 'number' ? u[field] : 0;
    }
    return out;
  }

  async turns(threadId: string): Promise<StoredTurn[]> {
    const rows = await this.db.selectFrom('conversation_items').selectAll().where('thread_id', '=', threadId).orderBy('seq').execute();
    return rows.map((r) => ({ role: r.role as StoredTurn['role'], text: r.text, createdAt: r.created_at, ...(r.image ? { image: r.image } : {}) }));
  }

  async addTurn(threadId: string, seq: number, role: StoredTurn['role'], text: string, image?: string): Promise<void> {
    await this.db
      .insertInto('conversation_items')
      .values({ thread_id: threadId, seq, role, text, created_at: new Date().toISOString(), ...(image ? { image } : {}) })
      .execute();
  }
}

function toRecord(row: ConversationsTable): ConversationRecord {
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
    nodeId: row.node_id,
    outcome: row.sip_status == null ? null : { wire: 'sip', code: row.sip_status },
    usage: row.usage === null ? null : (JSON.parse(row.usage) as Record<string, unknown>),
    quality: row.quality === null ? null : (JSON.parse(row.quality) as Record<string, unknown>),
    recording: (row.recording as RecordingState | null) ?? null,
    transport: row.transport ?? null,
  };
}
