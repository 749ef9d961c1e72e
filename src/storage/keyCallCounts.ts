// Each API key's live calls on every node, so that MAX_CALLS_PER_KEY holds across the cluster. Each
// node (each worker) keeps its own counts in Redis, a hash parley:calls:<nodeId> (key id -> calls),
// written as they change and rewritten whole with every heartbeat, which also renews the hash's
// expiry (NODE_LOST_AFTER_MS): a node that dies stops counting when it is taken for lost, as its
// calls are recorded failed. A sorted set (parley:calls:nodes, by last rewrite) lists the nodes
// that have a hash, so a count reads theirs alone.
// Without REDIS_URL there is nothing shared to count in: each node counts its own calls.
// Redis unreachable: a count cannot be had (the caller counts its node's own calls), writes are
// dropped; one warning per outage, and the first heartbeat after it rewrites the node's counts.
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { isRedisUnavailable } from './unavailable.js';

const HASH_PREFIX = 'parley:calls:';
const INDEX = 'parley:calls:nodes';
/** A Redis that does not answer within this is taken as unreachable for the count. */
const COMMAND_TIMEOUT_MS = 500;
/** How long start-up waits for the first connection. */
const CONNECT_WAIT_MS = 2000;
/**
 * Nodes silent this many NODE_LOST_AFTER_MS are dropped from the index; their hashes expired long
 * before (generous: the index is scored by each node's clock).
 */
const INDEX_KEPT_FOR = 10;

export interface KeyCallCounts {
  /** This node now carries `calls` calls of key `apiKeyId`. */
  set(apiKeyId: string, calls: number): void;
  /** The key's calls on every live node (this node's as last set), or undefined when they cannot be had. */
  total(apiKeyId: string): Promise<number | undefined>;
  /** Writes this node's counts (`snapshot`) now and every `everyMs` until close(). */
  start(snapshot: () => ReadonlyMap<string, number>, everyMs: number): Promise<void>;
  /** Stops, and withdraws this node's counts (its calls are drained by then). */
  close(): Promise<void>;
}

export interface KeyCallCountsLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export class RedisKeyCallCounts implements KeyCallCounts {
  private readonly redis: Redis;
  private readonly hash: string;
  private timer: NodeJS.Timeout | undefined;
  private outage = false;

  constructor(
    url: string,
    private readonly nodeId: string,
    /** NODE_LOST_AFTER_MS: the counts of a node that stopped rewriting them expire after this. */
    private readonly lostAfterMs: number,
    private readonly log: KeyCallCountsLog,
  ) {
    this.hash = HASH_PREFIX + nodeId;
    // No offline queue and no retries: a call's admission never waits for Redis to come back. One
    // connection keeps the writes in the order they were made, and a count after them.
    this.redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: COMMAND_TIMEOUT_MS });
    // Errors are the reconnection loop's business; without a listener they would end the process.
    this.redis.on('error', () => {});
  }

  async start(snapshot: () => ReadonlyMap<string, number>, everyMs: number): Promise<void> {
    this.redis.connect().catch(() => {});
    const timer = new AbortController();
    setTimeout(() => timer.abort(), CONNECT_WAIT_MS).unref();
    await once(this.redis, 'ready', { signal: timer.signal }).catch(() => {});
    timer.abort();
    const rewrite = () => {
      const now = Date.now();
      const counts = [...snapshot()].flat();
      const tx = this.redis.multi().del(this.hash);
      if (counts.length) tx.hset(this.hash, ...counts).pexpire(this.hash, this.lostAfterMs);
      tx.zadd(INDEX, now, this.nodeId).zremrangebyscore(INDEX, '-inf', now - INDEX_KEPT_FOR * this.lostAfterMs);
      tx.exec().catch(() => {});
    };
    rewrite();
    this.timer = setInterval(rewrite, everyMs);
    this.timer.unref();
  }

  set(apiKeyId: string, calls: number): void {
    if (this.redis.status !== 'ready') return;
    const tx = this.redis.multi();
    if (calls > 0) tx.hset(this.hash, apiKeyId, calls).pexpire(this.hash, this.lostAfterMs);
    else tx.hdel(this.hash, apiKeyId);
    tx.zadd(INDEX, Date.now(), this.nodeId).exec().catch(() => {});
  }

  async total(apiKeyId: string): Promise<number | undefined> {
    try {
      if (this.redis.status !== 'ready') throw `connection ${this.redis.status}`;
      const nodes = await this.redis.zrange(INDEX, 0, -1);
      const counts = (await this.redis.pipeline(nodes.map((id) => ['hget', HASH_PREFIX + id, apiKeyId])).exec()) ?? [];
      let total = 0;
      for (const [err, count] of counts) {
        if (err) throw err;
        total += Number(count ?? 0);
      }
      if (this.outage) {
        this.outage = false;
        this.log.info({}, 'Redis reachable again: calls per key are counted across the nodes again');
      }
      return total;
    } catch (err) {
      if (!this.outage) {
        this.outage = true;
        const message = err instanceof Error ? err.message : String(err);
        // Anything but an outage is a bug worth saying so; the call is still admitted on the node's own count.
        const unexpected = err instanceof Error && !isRedisUnavailable(err);
        this.log.warn({ err: message, ...(unexpected ? { unexpected } : {}) }, "Redis unreachable: calls per key are counted by each node alone until it is back");
      }
      return undefined;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.redis.status === 'ready') await this.redis.multi().del(this.hash).zrem(INDEX, this.nodeId).exec().catch(() => {});
    this.redis.disconnect();
  }
}
