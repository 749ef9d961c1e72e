// Tells every node at once about changes that their caches would otherwise notice only after a TTL:
// a revoked API key, a rotated signing key. Redis pub/sub when REDIS_URL is set; otherwise nothing
// (a single node, or nodes relying on KEY_CACHE_TTL_MS and the 30 s signing-key reload).
// A Redis outage never takes a node down: the subscriber reconnects by itself, and since notices
// sent meanwhile are lost, the node is told to resynchronise its caches once it is back.
import { Redis } from 'ioredis';
import type { StoreHealth } from './db.js';
import { StoreUnavailable, isRedisUnavailable } from './unavailable.js';

export type BusMessage = { kind: 'key-revoked'; id: string } | { kind: 'signing-key-rotated'; kid: string };

const CHANNEL = 'parley:invalidate';

export interface InvalidationBus {
  /** Rejects with StoreUnavailable when Redis cannot take the notice. */
  publish(message: BusMessage): Promise<void>;
  /**
   * Delivers every notice to `handler`, from now on and across reconnections; `resync` runs when
   * the subscription comes back after a break (notices may have been missed).
   */
  subscribe(handler: (message: BusMessage) => void, resync: () => void): void;
  /** Redis as this node sees it (ready when not configured: nothing depends on it then). */
  health(): StoreHealth;
  close(): Promise<void>;
}

const noBus: InvalidationBus = {
  publish: async () => {},
  subscribe: () => {},
  health: () => ({ state: 'ready' }),
  close: async () => {},
};

export function openBus(redisUrl: string | undefined): InvalidationBus {
  if (!redisUrl) return noBus;
  const pub = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true });
  // Subscribed connections retry their commands until Redis is back (the subscription must happen).
  const sub = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: null, enableOfflineQueue: true });
  // Errors are the reconnection loop's business; without listeners they would end the process.
  pub.on('error', () => {});
  sub.on('error', () => {});
  let subscribed = false;
  return {
    async publish(message) {
      try {
        if (pub.status === 'wait') await pub.connect();
        await pub.publish(CHANNEL, JSON.stringify(message));
      } catch (err) {
        throw isRedisUnavailable(err) ? new StoreUnavailable('redis', err) : err;
      }
    },
    subscribe(handler, resync) {
      if (subscribed) return;
      subscribed = true;
      let readyBefore = false;
      sub.on('ready', () => {
        if (readyBefore) resync();
        readyBefore = true;
      });
      sub.on('message', (_channel: string, raw: string) => {
        let message: BusMessage;
        try {
          message = JSON.parse(raw) as BusMessage;
        } catch {
          return; // a foreign or malformed message
        }
        handler(message);
      });
      sub.connect().catch(() => {});
      sub.subscribe(CHANNEL).catch(() => {});
    },
    health() {
      if (!subscribed || sub.status === 'ready') return { state: 'ready' };
      return { state: 'failed', detail: `Redis connection ${sub.status}` };
    },
    async close() {
      pub.disconnect();
      sub.disconnect();
    },
  };
}
