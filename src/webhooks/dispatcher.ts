// Sends the outbox's due deliveries, on every node: polls the store (and is kicked when this node
// writes an event), claims rows (outbox.ts) and posts each, signed per Standard Webhooks. At most
// `concurrency` requests are in flight and one per endpoint, so a slow receiver holds one slot, not
// the others' deliveries. 2xx: delivered; 410: the endpoint is disabled; anything else is retried
// (backoff.ts), a destination the outbound policy refuses too (never sent: the DNS, or the allow
// list, may change back). Secrets are never logged.
import { SpanKind } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { startSpan, type SpanParent, type TraceSpan } from '../observability/tracing.js';
import { OutboundRefused, outboundRequest, type OutboundGuard } from '../system/outboundRequest.js';
import { nextAttemptAt } from './backoff.js';
import type { WebhookEndpointStore } from './endpoints.js';
import type { Delivery, WebhookOutbox } from './outbox.js';

/** How long settled deliveries stay listed (parley webhooks deliveries) before they are forgotten. */
export const SETTLED_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** Of a receiver's answer only this much body is read (for the delivery's last error), the rest never. */
const RESPONSE_BYTES_KEPT = 4096;
/** How much of a failed answer's body the delivery's last error quotes. */
const BODY_QUOTED_CHARS = 200;

export interface DispatcherOptions {
  pollMs: number;
  timeoutMs: number;
  /** Requests in flight on this node at once. */
  concurrency: number;
  /** The cap of the backoff between attempts. */
  retryMaxMs: number;
  /** Counts each attempt by outcome (delivered, retry, failed, disabled). */
  attempted?: (outcome: string) => void;
  /** Which addresses a delivery may connect to. */
  guard: OutboundGuard;
  /** Where each attempt's span begins a trace (traces on); none: not traced. */
  trace?: SpanParent;
}

export class WebhookDispatcher {
  /** Endpoints with a request in flight from this node. */
  private readonly busy = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pumping = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly outbox: WebhookOutbox,
    private readonly endpoints: WebhookEndpointStore,
    private readonly opts: DispatcherOptions,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.kick(), this.opts.pollMs);
    this.timer.unref();
    this.pruneTimer = setInterval(() => this.prune(), PRUNE_EVERY_MS);
    this.pruneTimer.unref();
    this.prune();
    this.kick();
  }

  private prune(): void {
    this.outbox.prune(new Date(Date.now() - SETTLED_RETENTION_MS)).catch((err: Error) => this.log.warn({ err }, 'settled webhook deliveries not pruned'));
  }

  /** Looks for due deliveries now (an event was just written). */
  kick(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((err: Error) => this.log.warn({ err }, 'webhook deliveries not claimed'))
      .finally(() => {
        this.pumping = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops claiming and waits for the requests in flight (each within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.pruneTimer);
    await Promise.all([...this.inFlight]);
  }

  /** A claim lasts beyond the request's timeout, so only a crashed node's claim lapses. */
  private get leaseMs(): number {
    return 2 * this.opts.timeoutMs + 5000;
  }

  private async pump(): Promise<void> {
    const free = this.opts.concurrency - this.inFlight.size;
    const claimed = await this.outbox.claimDue(free, this.leaseMs, this.busy);
    for (const delivery of claimed) {
      this.busy.add(delivery.endpointId);
      const attempt = this.attempt(delivery)
        .catch((err: Error) => this.log.warn({ err, delivery: delivery.id }, 'webhook delivery outcome not recorded'))
        .finally(() => {
          this.busy.delete(delivery.endpointId);
          this.inFlight.delete(attempt);
          this.kick();
        });
      this.inFlight.add(attempt);
    }
  }

  /** One attempt of a delivery, as a span of its own (its receiver's address, never its URL: a path may hold a token). */
  private async attempt(delivery: Delivery): Promise<void> {
    const span = startSpan(
      this.opts.trace,
      'webhook.delivery',
      {
        'http.request.method': 'POST',
        ...(this.opts.trace ? serverOf(delivery.url) : {}),
        'parley.webhook.event_id': delivery.eventId,
        'parley.webhook.event_type': delivery.eventType,
        'parley.webhook.endpoint_id': delivery.endpointId,
        'parley.webhook.attempt': delivery.attempts,
        'parley.api_key.id': delivery.apiKeyId,
      },
      SpanKind.CLIENT,
    );
    try {
      await this.deliver(delivery, span);
    } catch (err) {
      span.fail(err);
      throw err;
    } finally {
      span.end();
    }
  }

  private async deliver(delivery: Delivery, span: TraceSpan): Promise<void> {
    const attempted = (outcome: string) => {
      span.set({ 'parley.webhook.outcome': outcome });
      this.opts.attempted?.(outcome);
    };
    const secret = await this.endpoints.secretOf(delivery.endpointId);
    if (!secret) {
      attempted('disabled');
      return this.outbox.dropped(delivery.id, 'endpoint removed or disabled');
    }
    const outcome = await post(delivery, secret, this.opts.timeoutMs, this.opts.guard);
    if (outcome.statusCode !== null) span.set({ 'http.response.status_code': outcome.statusCode });
    if (outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300) {
      attempted('delivered');
      return this.outbox.delivered(delivery.id, outcome.statusCode);
    }
    span.fail(new Error(outcome.error));
    if (outcome.statusCode === 410) {
      attempted('disabled');
      this.log.warn({ endpoint: delivery.endpointId, ...span.logFields }, 'webhook endpoint answered 410 Gone: disabled');
      await this.outbox.attemptFailed(delivery.id, { statusCode: 410, error: 'endpoint answered 410 Gone' }, null);
      return this.endpoints.disable(delivery.endpointId);
    }
    const next = nextAttemptAt(Date.parse(delivery.createdAt), delivery.attempts, this.opts.retryMaxMs);
    attempted(next === null ? 'failed' : 'retry');
    if (next === null) this.log.warn({ endpoint: delivery.endpointId, event: delivery.eventId, error: outcome.error, ...span.logFields }, 'webhook delivery given up');
    await this.outbox.attemptFailed(delivery.id, outcome, next);
  }
}

/** One signed POST; its outcome (a status code, or null and why there was none). */
async function post(delivery: Delivery, secret: string, timeoutMs: number, guard: OutboundGuard): Promise<{ statusCode: number | null; error: string }> {
  const timestamp = new Date();
  const signature = new Webhook(secret).sign(delivery.eventId, timestamp, delivery.payload);
  try {
    const res = await outboundRequest(
      new URL(delivery.url),
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Parley-Webhooks',
          'webhook-id': delivery.eventId,
          'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: delivery.payload,
        signal: AbortSignal.timeout(timeoutMs),
        keepBytes: RESPONSE_BYTES_KEPT,
      },
      guard,
    );
    const ok = res.status >= 200 && res.status < 300;
    return { statusCode: res.status, error: ok ? '' : answered(res.status, res.head) };
  } catch (err) {
    const e = err as Error & { code?: string };
    if (err instanceof OutboundRefused) return { statusCode: null, error: `refused, not sent: ${e.message}` };
    const error = e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : (e.code ?? e.message);
    return { statusCode: null, error };
  }
}

/** The receiver's host and port, as a span names them (nothing for a URL that does not parse: the attempt says why). */
function serverOf(raw: string): { 'server.address'?: string; 'server.port'?: number } {
  try {
    const url = new URL(raw);
    return { 'server.address': url.hostname, 'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80) };
  } catch {
    return {};
  }
}

/** `answered 503`, and the start of the body when there is one (receivers often say why there). */
function answered(status: number, head: Buffer): string {
  const text = head.toString('utf8').replace(/\s+/g, ' ').trim().slice(0, BODY_QUOTED_CHARS);
  return text ? `answered ${status}: ${text}` : `answered ${status}`;
}
