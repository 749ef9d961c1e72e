// The outbox: one row per (event, endpoint), written when the event happens and worked off by the
// dispatcher of any node. A row is claimed with a conditional update (a lease), so on SQLite and
// PostgreSQL alike one node sends it; a claim a crashed node held lapses and another takes it up.
import type { Db, WebhookDeliveriesTable } from '../storage/db.js';
import { randomId } from '../system/ids.js';
import type { WebhookEndpoint } from './endpoints.js';
import type { WebhookEvent } from './events.js';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'disabled';

export interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  apiKeyId: string;
  endpointId: string;
  url: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  /** Unix ms. */
  nextAttemptAt: number;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export class WebhookOutbox {
  constructor(private readonly db: Db) {}

  /** Writes the event once for each endpoint, due now. */
  async enqueue(event: WebhookEvent, apiKeyId: string, endpoints: WebhookEndpoint[]): Promise<void> {
    if (!endpoints.length) return;
    const now = new Date();
    const payload = JSON.stringify(event);
    await this.db
      .insertInto('webhook_deliveries')
      .values(
        endpoints.map((e) => ({
          id: randomId('whd_', 12),
          event_id: event.id,
          event_type: event.type,
          api_key_id: apiKeyId,
          endpoint_id: e.id,
          url: e.url,
          payload,
          status: 'pending',
          attempts: 0,
          next_attempt_at: now.getTime(),
          lease_until: 0,
          last_status_code: null,
          last_error: null,
          created_at: now.toISOString(),
          updated_at: now.toISOString(),
        })),
      )
      .execute();
  }

  /**
   * Claims up to `limit` due deliveries for `leaseMs`, at most one per endpoint and none for the
   * endpoints in `busy`; each claim counts an attempt. Rows another node claimed first are skipped.
   */
  async claimDue(limit: number, leaseMs: number, busy: ReadonlySet<string>, now = Date.now()): Promise<Delivery[]> {
    if (limit <= 0) return [];
    let query = this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where('lease_until', '<=', now);
    // A busy endpoint's backlog must not fill the candidates and hide the other endpoints' rows.
    if (busy.size) query = query.where('endpoint_id', 'not in', [...busy]);
    const candidates = await query.orderBy('next_attempt_at').orderBy('created_at').limit(limit * 4).execute();
    const claimed: Delivery[] = [];
    const endpoints = new Set(busy);
    for (const row of candidates) {
      if (claimed.length >= limit) break;
      if (endpoints.has(row.endpoint_id)) continue;
      const result = await this.db
        .updateTable('webhook_deliveries')
        .set({ lease_until: now + leaseMs, attempts: row.attempts + 1 })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .where('lease_until', '<=', now)
        .where('attempts', '=', row.attempts)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) continue;
      endpoints.add(row.endpoint_id);
      claimed.push(deliveryOf({ ...row, attempts: row.attempts + 1 }));
    }
    return claimed;
  }

  async delivered(id: string, statusCode: number): Promise<void> {
    await this.settle(id, { status: 'delivered', last_status_code: statusCode, last_error: null });
  }

  /** The attempt failed: tried again at `nextAttemptAt`, or given up (failed) when null. */
  async attemptFailed(id: string, outcome: { statusCode: number | null; error: string }, nextAttemptAt: number | null): Promise<void> {
    const fields = { last_status_code: outcome.statusCode, last_error: outcome.error.slice(0, 500) };
    if (nextAttemptAt === null) return this.settle(id, { ...fields, status: 'failed' });
    return this.settle(id, { ...fields, status: 'pending', next_attempt_at: nextAttemptAt });
  }

  /** The delivery cannot be sent (its endpoint is gone or disabled). */
  async dropped(id: string, reason: string): Promise<void> {
    await this.settle(id, { status: 'disabled', last_error: reason });
  }

  /** Deliveries, newest first: of one key's calls or all. */
  async list(opts: { apiKeyId?: string; limit: number }): Promise<Delivery[]> {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(opts.limit);
    if (opts.apiKeyId) q = q.where('api_key_id', '=', opts.apiKeyId);
    return (await q.execute()).map(deliveryOf);
  }

  /** Forgets settled deliveries (delivered, failed, disabled) last changed before `before`; returns how many. */
  async prune(before: Date): Promise<number> {
    const result = await this.db
      .deleteFrom('webhook_deliveries')
      .where('status', '!=', 'pending')
      .where('updated_at', '<', before.toISOString())
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  private async settle(id: string, fields: Partial<WebhookDeliveriesTable>): Promise<void> {
    await this.db
      .updateTable('webhook_deliveries')
      .set({ ...fields, lease_until: 0, updated_at: new Date().toISOString() })
      .where('id', '=', id)
      .execute();
  }
}

function deliveryOf(row: WebhookDeliveriesTable): Delivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    apiKeyId: row.api_key_id,
    endpointId: row.endpoint_id,
    url: row.url,
    payload: row.payload,
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
