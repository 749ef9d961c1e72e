// Tells every node at once about changes that their caches would otherwise notice only after a TTL:
// a revoked API key, a rotated signing key. Redis pub/sub when REDIS_URL is set; otherwise nothing
// (a single node, or nodes relying on KEY_CACHE_TTL_MS and the 30 s signing-key reload).
import { Redis } from 'ioredis';

export type BusMessage = { kind: 'key-revoked'; id: string } | { kind: 'signing-key-rotated'; kid: string };

const CHANNEL = 'parley:invalidate';

export interface InvalidationBus {
  publish(message: BusMessage): Promise<void>;
  subscribe(handler: (message: BusMessage) => void): Promise<void>;
  close(): Promise<void>;
}

const noBus: InvalidationBus = {
  publish: async () => {},
  subscribe: async () => {},
  close: async () => {},
};

export function openBus(redisUrl: string | undefined): InvalidationBus {
  if (!redisUrl) return noBus;
  const options = { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true } as const;
  const pub = new Redis(redisUrl, options);
  let sub: Redis | undefined;
  // A Redis outage degrades to TTL-based propagation; it must never take a node down.
  pub.on('error', () => {});
  return {
    async publish(message) {
      if (pub.status === 'wait') await pub.connect();
      await pub.publish(CHANNEL, JSON.stringify(message));
    },
    async subscribe(handler) {
      sub = new Redis(redisUrl, options);
      sub.on('error', () => {});
      await sub.connect();
      await sub.subscribe(CHANNEL);
      sub.on('message', (_channel: string, raw: string) => {
        try {
          handler(JSON.parse(raw) as BusMessage);
        } catch {
          // ignore foreign or malformed messages
        }
      });
    },
    async close() {
      pub.disconnect();
      sub?.disconnect();
    },
  };
}
