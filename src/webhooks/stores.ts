// Where call events go (the global endpoint and each key's) and their deliveries, on an open store.
import type { Store } from '../auth/store.js';
import type { Config } from '../config/env.js';
import { WebhookEndpointStore } from './endpoints.js';
import { WebhookOutbox } from './outbox.js';

export interface WebhookStores {
  webhookEndpoints: WebhookEndpointStore;
  webhookOutbox: WebhookOutbox;
}

export function webhookStoresOf(store: Store, config: Config): WebhookStores {
  const global = config.WEBHOOK_URL && config.WEBHOOK_SECRET ? { url: config.WEBHOOK_URL, secret: config.WEBHOOK_SECRET, events: config.WEBHOOK_EVENTS } : undefined;
  return {
    webhookEndpoints: new WebhookEndpointStore(store.db, store.pepper, global),
    webhookOutbox: new WebhookOutbox(store.db),
  };
}
