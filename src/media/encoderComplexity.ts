// The Opus encoders' complexity, node-wide, following the node's load: a step down each second the
// load is high, a step back up after some seconds of it being low, between OPUS_MIN_COMPLEXITY and
// OPUS_COMPLEXITY — as libwebrtc's CPU-overuse detector lowers a sender's resolution quickly and
// raises it again slowly. Encoding is most of a call's CPU and complexity is the one encoder setting
// that moves it (bench/opus-builds.ts): this buys headroom before the node refuses calls at its load
// threshold.

export interface EncoderComplexityOptions {
  /** OPUS_COMPLEXITY: the level with headroom to spare. */
  max: number;
  /** OPUS_MIN_COMPLEXITY: the lowest it goes under load. */
  min: number;
  /** The load at which the node stops taking calls (LOAD_THRESHOLD; 0 when off, then 0.75 here). */
  threshold: number;
}

/** Seconds of low load before each step back up. */
export const STEPS_UP_AFTER_SAMPLES = 3;

export class EncoderComplexity {
  private level: number;
  private calm = 0;
  private readonly downAbove: number;
  private readonly upBelow: number;

  constructor(private readonly opts: EncoderComplexityOptions) {
    this.level = opts.max;
    const threshold = opts.threshold > 0 ? opts.threshold : 0.75;
    // Down well before the threshold; up only well below where it went down.
    this.downAbove = 0.8 * threshold;
    this.upBelow = 0.6 * threshold;
  }

  /** The complexity encoders use now. */
  get current(): number {
    return this.level;
  }

  /** Told each load figure; returns the complexity from now on. */
  observe(load: number): number {
    if (load >= this.downAbove) {
      this.calm = 0;
      if (this.level > this.opts.min) this.level--;
    } else if (load < this.upBelow) {
      if (++this.calm >= STEPS_UP_AFTER_SAMPLES && this.level < this.opts.max) {
        this.level++;
        this.calm = 0;
      }
    } else {
      this.calm = 0;
    }
    return this.level;
  }
}
