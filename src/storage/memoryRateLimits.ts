// Rate-limit counters in this process's memory: the store without Redis, and the fallback while
// Redis is unreachable. Bounded: windows that ended are pruned, and beyond `maxSubjects` the oldest
// windows are forgotten (a forgotten subject starts a fresh window: memory wins over exactness).
import { decide, type RateDecision, type RateLimitStore } from './rateLimits.js';

interface Window {
  count: number;
  endsAt: number;
}

export interface MemoryRateLimitOptions {
  /** Subjects tracked at most (all scopes together). */
  maxSubjects?: number;
  now?: () => number;
}

const DEFAULT_MAX_SUBJECTS = 100_000;

export class MemoryRateLimitStore implements RateLimitStore {
  // Insertion order is window-start order (an entry is re-inserted when its window starts over),
  // so the first entries are the oldest windows.
  private readonly windows = new Map<string, Window>();
  private readonly maxSubjects: number;
  private readonly now: () => number;
  /** When the next sweep of ended windows is due (at most one a second, and only when growing). */
  private nextSweepAt = 0;

  constructor(options: MemoryRateLimitOptions = {}) {
    this.maxSubjects = options.maxSubjects ?? DEFAULT_MAX_SUBJECTS;
    this.now = options.now ?? Date.now;
  }

  /** Subjects tracked now (for tests and metrics). */
  get size(): number {
    return this.windows.size;
  }

  hit(scope: string, subject: string, limit: number, windowMs: number): RateDecision {
    const now = this.now();
    const key = `${scope}\u0000${subject}`;
    let w = this.windows.get(key);
    if (!w || w.endsAt <= now) {
      if (w) this.windows.delete(key);
      w = { count: 0, endsAt: now + windowMs };
      this.windows.set(key, w);
      if (this.windows.size > this.maxSubjects / 2 && now >= this.nextSweepAt) this.sweep(now);
      // Still too many live windows: forget the oldest.
      for (const k of this.windows.keys()) {
        if (this.windows.size <= this.maxSubjects) break;
        this.windows.delete(k);
      }
    }
    w.count++;
    return decide(w.count, limit, w.endsAt - now);
  }

  private sweep(now: number): void {
    this.nextSweepAt = now + 1000;
    for (const [k, w] of this.windows) if (w.endsAt <= now) this.windows.delete(k);
  }

  async close(): Promise<void> {
    this.windows.clear();
  }
}
