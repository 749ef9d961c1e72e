// Webhook endpoints: per API key (added with the CLI, its secret shown once and kept encrypted), and
// the global one from WEBHOOK_URL (row `global`, its secret only in the configuration).
import type { WebhookEventType } from '../config/webhookEventTypes.js';
import type { Db, WebhookEndpointsTable } from '../storage/db.js';
import { randomId } from '../system/ids.js';
import { DEFAULT_WEBHOOK_EVENTS } from './events.js';
import { WebhookSecretBox, newWebhookSecret } from './secrets.js';

export const GLOBAL_ENDPOINT_ID = 'global';

export interface WebhookEndpoint {
  id: string;
  apiKeyId: string | null;
  url: string;
  events: WebhookEventType[];
  createdAt: string;
  disabledAt: string | null;
}

/** The global endpoint as configured (WEBHOOK_URL, WEBHOOK_SECRET, WEBHOOK_EVENTS). */
export interface GlobalEndpoint {
  url: string;
  secret: string;
  events: WebhookEventType[];
}

export class WebhookEndpointStore {
  private readonly box: WebhookSecretBox;

  constructor(
    private readonly db: Db,
    pepper: string,
    private readonly global: GlobalEndpoint | undefined,
  ) {
    this.box = new WebhookSecretBox(pepper);
  }

  /**
   * Records the configured global endpoint; a new URL (or events) replaces the old and is enabled
   * again. Every node should have the same WEBHOOK_URL and WEBHOOK_EVENTS.
   */
  async syncGlobal(): Promise<void> {
    const row = await this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', GLOBAL_ENDPOINT_ID).executeTakeFirst();
    if (!this.global) {
      if (row) await this.db.deleteFrom('webhook_endpoints').where('id', '=', GLOBAL_ENDPOINT_ID).execute();
      return;
    }
    const events = this.global.events.join(',');
    if (row && row.url === this.global.url && row.events === events) return;
    if (row) {
      await this.db.updateTable('webhook_endpoints').set({ url: this.global.url, events, disabled_at: null }).where('id', '=', GLOBAL_ENDPOINT_ID).execute();
      return;
    }
    await this.db
      .insertInto('webhook_endpoints')
      .values({ id: GLOBAL_ENDPOINT_ID, api_key_id: null, url: this.global.url, secret_enc: '', events, created_at: new Date().toISOString(), disabled_at: null })
      // Workers and nodes starting together may all find it missing: the first insert wins.
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /** Adds an endpoint for key `apiKeyId`; the secret is returned this once. */
  async add(apiKeyId: string, url: string, events: WebhookEventType[] = DEFAULT_WEBHOOK_EVENTS): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newWebhookSecret();
    const row: WebhookEndpointsTable = {
      id: randomId('whep_', 12),
      api_key_id: apiKeyId,
      url,
      secret_enc: this.box.seal(secret),
      events: events.join(','),
      created_at: new Date().toISOString(),
      disabled_at: null,
    };
    await this.db.insertInto('webhook_endpoints').values(row).execute();
    return { endpoint: endpointOf(row), secret };
  }

  /** Endpoints (never their secrets), of one key or all, the global one included. */
  async list(apiKeyId?: string): Promise<WebhookEndpoint[]> {
    let q = this.db.selectFrom('webhook_endpoints').selectAll().orderBy('created_at');
    if (apiKeyId) q = q.where('api_key_id', '=', apiKeyId);
    return (await q.execute()).map(endpointOf);
  }

  /** Removes a key's endpoint; its undelivered events are dropped (disabled). False when unknown. */
  async remove(id: string): Promise<boolean> {
    if (id === GLOBAL_ENDPOINT_ID) return false;
    const result = await this.db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
    if (Number(result.numDeletedRows) === 0) return false;
    await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'disabled', last_error: 'endpoint removed', updated_at: new Date().toISOString() })
      .where('endpoint_id', '=', id)
      .where('status', '=', 'pending')
      .execute();
    return true;
  }

  /** The enabled endpoints that receive `type` for key `apiKeyId`'s calls: the global one and the key's own. */
  async receiving(apiKeyId: string, type: WebhookEventType): Promise<WebhookEndpoint[]> {
    const rows = await this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('disabled_at', 'is', null)
      .where((eb) => eb.or([eb('api_key_id', '=', apiKeyId), eb('id', '=', GLOBAL_ENDPOINT_ID)]))
      .execute();
    return rows.map(endpointOf).filter((e) => e.events.includes(type) && (e.id !== GLOBAL_ENDPOINT_ID || this.global));
  }

  /** The secret to sign with for an enabled endpoint; undefined when it is gone or disabled. */
  async secretOf(id: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('webhook_endpoints').select(['secret_enc', 'disabled_at']).where('id', '=', id).executeTakeFirst();
    if (!row || row.disabled_at) return undefined;
    if (id === GLOBAL_ENDPOINT_ID) return this.global?.secret;
    return this.box.open(row.secret_enc);
  }

  /** A receiver answered 410 Gone: the endpoint gets nothing more, its pending deliveries included. */
  async disable(id: string): Promise<void> {
    const now = new Date().toISOString();
    await this.db.updateTable('webhook_endpoints').set({ disabled_at: now }).where('id', '=', id).execute();
    await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'disabled', last_error: 'endpoint disabled (410 Gone)', updated_at: now })
      .where('endpoint_id', '=', id)
      .where('status', '=', 'pending')
      .execute();
  }
}

function endpointOf(row: WebhookEndpointsTable): WebhookEndpoint {
  return {
    id: row.id,
    apiKeyId: row.api_key_id,
    url: row.url,
    events: row.events.split(',').filter(Boolean) as WebhookEventType[],
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
  };
}
