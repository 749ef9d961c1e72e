// The store: the database, Redis and the webhook tables.
import type { Config } from '../config/env.js';
import { openStore, type Store } from '../auth/store.js';
import type { Teardown } from '../system/teardown.js';
import { webhookStoresOf, type WebhookStores } from '../webhooks/stores.js';
import type { Log } from './types.js';

export type FullStore = Store & WebhookStores;

export async function startStore(config: Config, deps: { log: Log }, teardown: Teardown): Promise<FullStore> {
  const opened = await openStore(config, deps.log);
  teardown.add('database', () => opened.db.destroy());
  const store = { ...opened, ...webhookStoresOf(opened, config) };
  teardown.add('Redis bus', () => store.bus.close());
  return store;
}
