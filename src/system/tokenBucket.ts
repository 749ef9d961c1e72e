// A token bucket: `ratePerSecond` on average, bursts of up to `burst` at once. For per-call limits
// held in memory (a call lives on one node), where a shared counter would be wasted.
export class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  /** Takes one token; false when the bucket is empty (the caller is over its rate). */
  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** What it holds now: whole tokens left, the most it holds, and seconds until it is full again. */
  state(): { remaining: number; limit: number; resetSeconds: number } {
    this.refill();
    return { remaining: Math.floor(this.tokens), limit: this.burst, resetSeconds: Math.round(((this.burst - this.tokens) / this.ratePerSecond) * 100) / 100 };
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.ratePerSecond);
    this.last = now;
  }
}
