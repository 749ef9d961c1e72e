// Rate-limit counters in Redis, shared by every node and worker: one atomic script per request
// (INCR, and the window's expiry on its first request). Keys are parley:rl:<scope>:<hash>; the
// subject (an address, a key id, a token id) is hashed, never stored as it came.
// Redis unreachable: the request is counted in this node's memory instead (limits per node rather
// than none, and never an error for the client); one warning per outage, and back to Redis by
// itself once it answers again.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { MemoryRateLimitStore } from './memoryRateLimits.js';
import { decide, type RateDecision, type RateLimitStore } from './rateLimits.js';
import { isRedisUnavailable } from './unavailable.js';

export const KEY_PREFIX = 'parley:rl:';

/** Returns [count, milliseconds left in the window]; the first request of a window sets its expiry. */
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

/** A Redis that does not answer within this is taken as unreachable for the request. */
const COMMAND_TIMEOUT_MS = 500;
/** How long start-up waits for the first connection (requests before it count in memory). */
const CONNECT_WAIT_MS = 2000;

export interface RateLimitLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

type Hitter = Redis & { parleyRateHit(key: string, windowMs: number): Promise<[number, number]> };

export function rateLimitKey(scope: string, subject: string): string {
  return `${KEY_PREFIX}${scope}:${createHash('sha256').update(subject).digest('base64url').slice(0, 27)}`;
}

export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: Hitter;
  private readonly fallback: MemoryRateLimitStore;
  private outage = false;

  constructor(
    url: string,
    private readonly log: RateLimitLog,
    fallback = new MemoryRateLimitStore(),
  ) {
    this.fallback = fallback;
    // No offline queue and no retries: a request never waits for Redis to come back.
    this.redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
    }) as Hitter;
    this.redis.defineCommand('parleyRateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    // Errors are the reconnection loop's business; without a listener they would end the process.
    this.redis.on('error', () => {});
  }

  /** Connects, waiting a little for the first connection; an unreachable Redis does not stop the start. */
  async start(): Promise<void> {
    this.redis.connect().catch(() => {});
    const timer = new AbortController();
    setTimeout(() => timer.abort(), CONNECT_WAIT_MS).unref();
    await once(this.redis, 'ready', { signal: timer.signal }).catch(() => {});
    timer.abort();
  }

  hit(scope: string, subject: string, limit: number, windowMs: number): RateDecision | Promise<RateDecision> {
    if (this.redis.status !== 'ready') return this.fromMemory(scope, subject, limit, windowMs, `connection ${this.redis.status}`);
    return this.redis.parleyRateHit(rateLimitKey(scope, subject), windowMs).then(
      ([count, msLeft]) => {
        if (this.outage) {
          this.outage = false;
          this.log.info({}, 'Redis reachable again: rate limits are shared across nodes again');
        }
        return decide(count, limit, msLeft);
      },
      (err: unknown) => this.fromMemory(scope, subject, limit, windowMs, err),
    );
  }

  /** `err`: what Redis answered, or a string when it was not asked (not connected). */
  private fromMemory(scope: string, subject: string, limit: number, windowMs: number, err: unknown): RateDecision {
    if (!this.outage) {
      this.outage = true;
      const message = err instanceof Error ? err.message : String(err);
      // Anything but an outage is a bug worth saying so; the client is still answered.
      if (typeof err === 'string' || isRedisUnavailable(err)) {
        this.log.warn({ err: message }, 'Redis unreachable: rate limits are counted by this node alone until it is back');
      } else {
        this.log.warn({ err: message, unexpected: true }, 'Redis rate-limit script failed: rate limits are counted by this node alone');
      }
    }
    return this.fallback.hit(scope, subject, limit, windowMs);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
    await this.fallback.close();
  }
}
