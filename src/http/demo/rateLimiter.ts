// A token bucket per client (keyed by IP): each holds up to `perMinute` requests and refills at
// `perMinute` a minute, so a client may burst and then keeps a steady rate. In memory, per node.

export type Admission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** Beyond this many tracked clients, buckets that have refilled completely are dropped. */
const PRUNE_ABOVE = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly refillPerMs: number;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.refillPerMs = perMinute / 60_000;
  }

  /** Takes one request from `client`'s bucket, or says how long until one is available. */
  take(client: string): Admission {
    const now = this.now();
    const bucket = this.buckets.get(client) ?? { tokens: this.perMinute, updatedAt: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.updatedAt) * this.refillPerMs);
    bucket.updatedAt = now;
    if (bucket.tokens < 1) {
      this.buckets.set(client, bucket);
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.refillPerMs / 1000)) };
    }
    bucket.tokens -= 1;
    this.buckets.set(client, bucket);
    if (this.buckets.size > PRUNE_ABOVE) this.prune(now);
    return { allowed: true };
  }

  // A full bucket is the same as no bucket, so forgetting it changes nothing but memory.
  private prune(now: number): void {
    for (const [client, b] of this.buckets) {
      if (b.tokens + (now - b.updatedAt) * this.refillPerMs >= this.perMinute) this.buckets.delete(client);
    }
  }
}
