// Values measured over a call (its jitter each second, each round trip), kept for their
// percentiles. A long call keeps a uniform random sample of them (reservoir sampling, Algorithm R),
// so a day-long call costs no more memory than an hour-long one.

/** An hour of one sample a second. */
const DEFAULT_CAPACITY = 3600;

export class SampleSet {
  private readonly values: number[] = [];
  private seen = 0;

  constructor(
    private readonly capacity = DEFAULT_CAPACITY,
    /** A uniform random number in [0, 1) (tests give their own). */
    private readonly random: () => number = Math.random,
  ) {}

  add(value: number): void {
    this.seen++;
    if (this.values.length < this.capacity) {
      this.values.push(value);
      return;
    }
    const slot = Math.floor(this.random() * this.seen);
    if (slot < this.capacity) this.values[slot] = value;
  }

  /** How many values were added (kept or not). */
  get count(): number {
    return this.seen;
  }

  /** The nearest-rank percentile (`p` from 0 to 100) of the values kept; undefined when there are none. */
  percentile(p: number): number | undefined {
    if (!this.values.length) return undefined;
    const sorted = [...this.values].sort((a, b) => a - b);
    const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
    return sorted[rank - 1];
  }
}
