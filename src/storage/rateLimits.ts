// Rate limits as counters: how many times a subject (an API key, an address, a token) was counted in
// its current window. A fixed window that starts at the subject's first request and lasts windowMs;
// every node counts in the same place when Redis is configured (redisRateLimits.ts), otherwise each
// node in its own memory (memoryRateLimits.ts).

export interface RateDecision {
  /** Whether this request is within the limit (it is counted either way). */
  allowed: boolean;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Seconds until the window ends and the count starts over (at least 1): the 429's Retry-After. */
  retryAfterSeconds: number;
}

export interface RateLimitStore {
  /**
   * Counts one request of `subject` under `scope` (e.g. "cs-key") and says whether it is within
   * `limit` requests per `windowMs`. Never rejects: a store that cannot answer answers from memory.
   */
  hit(scope: string, subject: string, limit: number, windowMs: number): RateDecision | Promise<RateDecision>;
  close(): Promise<void>;
}

/** The decision for the `count`th request of a window that ends in `msLeft`. */
export function decide(count: number, limit: number, msLeft: number): RateDecision {
  return { allowed: count <= limit, remaining: Math.max(0, limit - count), retryAfterSeconds: Math.max(1, Math.ceil(msLeft / 1000)) };
}
