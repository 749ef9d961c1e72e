// Where a process counts its rate limits: in Redis when REDIS_URL is set (every node and worker
// together), else in its own memory. Used by the HTTP limits and the SIP server's.
import type { Config } from '../config/env.js';
import { MemoryRateLimitStore } from './memoryRateLimits.js';
import type { RateLimitStore } from './rateLimits.js';
import { RedisRateLimitStore, type RateLimitLog } from './redisRateLimits.js';

/** The store for `config`: Redis (waiting briefly for its first connection) or memory. */
export async function openRateLimitStore(config: Pick<Config, 'REDIS_URL'>, log: RateLimitLog): Promise<RateLimitStore> {
  if (!config.REDIS_URL) return new MemoryRateLimitStore();
  const store = new RedisRateLimitStore(config.REDIS_URL, log);
  await store.start();
  return store;
}
