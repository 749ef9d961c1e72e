// Requests to URLs a user chose (webhooks, a session's MCP servers), and the webhook deliveries.
import type { Config } from '../config/env.js';
import type { Store } from '../auth/store.js';
import type { Metrics } from '../observability/metrics.js';
import type { SpanParent } from '../observability/tracing.js';
import type { NodeStore } from '../storage/nodes.js';
import type { Listener } from '../system/outboundPolicy.js';
import { OutboundRefused, type OutboundGuard } from '../system/outboundRequest.js';
import { StartupError } from '../system/startupError.js';
import type { Teardown } from '../system/teardown.js';
import { checkWebhookUrl, configuredHttpListener, webhookGuard } from '../webhooks/destinations.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { WebhookPublisher } from '../webhooks/publisher.js';
import type { WebhookStores } from '../webhooks/stores.js';
import type { Log } from './types.js';

export interface OutboundPart {
  guard: OutboundGuard;
  /** Records the port this node's HTTP server got, which the guard refuses too. */
  listening(listener: Listener): void;
}

/**
 * Where requests to URLs a user chose may go: Parley's own listeners are among what they may not
 * reach, this node's HTTP port once it is known.
 */
export function outboundOf(config: Config, nodeStore: NodeStore): OutboundPart {
  let httpListener: Listener | undefined = configuredHttpListener(config);
  return {
    guard: webhookGuard(config, nodeStore, () => httpListener),
    listening: (listener) => {
      httpListener = listener;
    },
  };
}

/** The webhook deliveries (the dispatcher started) and the publisher that writes their events. */
export async function startWebhooks(
  config: Config,
  deps: { store: Store & WebhookStores; guard: OutboundGuard; metrics: Metrics; log: Log; trace: SpanParent | undefined },
  teardown: Teardown,
): Promise<WebhookPublisher> {
  const { store, guard, metrics, log, trace } = deps;
  if (config.WEBHOOK_URL) await checkGlobalWebhookUrl(config.WEBHOOK_URL, guard, log);
  await store.webhookEndpoints.syncGlobal();
  const dispatcher = new WebhookDispatcher(
    store.webhookOutbox,
    store.webhookEndpoints,
    {
      pollMs: config.WEBHOOK_POLL_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      retryMaxMs: config.WEBHOOK_RETRY_MAX_MS,
      attempted: (outcome) => metrics.webhookAttempts.inc({ outcome }),
      guard,
      ...(trace ? { trace } : {}),
    },
    log,
  );
  dispatcher.start();
  teardown.add('webhook dispatcher', () => dispatcher.stop());
  return new WebhookPublisher(store.webhookEndpoints, store.webhookOutbox, dispatcher);
}

/**
 * A WEBHOOK_URL the outbound policy refuses stops the start; one that does not resolve now is only
 * warned of (its DNS may be back by the first event, and each delivery is checked again anyway).
 */
async function checkGlobalWebhookUrl(url: string, guard: OutboundGuard, log: Log): Promise<void> {
  try {
    await checkWebhookUrl(url, guard);
  } catch (err) {
    if (err instanceof OutboundRefused) throw new StartupError(`WEBHOOK_URL: ${err.message}`);
    log.warn({ err: (err as Error).message }, 'WEBHOOK_URL cannot be checked now; each delivery will be');
  }
}
