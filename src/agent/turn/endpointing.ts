// The end-of-turn rule on a VAD's speech probabilities, window by window. Hangover-free: the
// probabilities are used as they come (no smoothing that holds "speech" after the voice stops), with
// Silero's own hysteresis — a turn starts on windows at or above `threshold` and its silence is
// counted from the first window under `threshold − 0.15`; windows in between neither start nor break
// the silence — so the silence wait can be short without cutting a caller off on a soft syllable.
import type { EndpointingOptions } from './types.js';

export interface EndpointingPolicyOptions extends EndpointingOptions {
  /** A turn longer than this ends anyway (the caller's speech then starts a new turn). */
  maxTurnMs: number;
}

/** Speech this long (consecutive windows at or above the threshold) makes an onset: a click does not. */
export const ONSET_MS = 60;
/** How far under `threshold` a window must fall to count as silence (Silero's default hysteresis). */
const HYSTERESIS = 0.15;

export type EndpointEvent =
  | { type: 'start'; /** Start of the turn's first speech window, ms of audio. */ onsetMs: number }
  /** The caller has been silent for `pauseMs` inside the turn: its end may be near. */
  | { type: 'pause'; /** Start of the silence, ms of audio. */ silenceStartMs: number }
  /** The caller spoke again after a pause; the turn goes on. */
  | { type: 'resume' }
  | {
      type: 'stop';
      /** End of the window that completed the silence (or reached the length limit). */
      endMs: number;
      /** Where the caller's speech ended: the start of that silence (endMs at the length limit). */
      speechEndMs: number;
      reason: 'silence' | 'max_length';
    };

export class EndpointingPolicy {
  private options: EndpointingPolicyOptions;
  /** Start of the current run of speech windows while no turn is open; undefined when none. */
  private runStartMs: number | undefined;
  private turnStartMs: number | undefined;
  /** Start of the silence that may end the open turn; undefined while the caller speaks. */
  private silenceStartMs: number | undefined;
  /** A pause was reported for the current silence. */
  private paused = false;

  constructor(options: EndpointingPolicyOptions) {
    this.options = { ...options };
  }

  get inTurn(): boolean {
    return this.turnStartMs !== undefined;
  }

  configure(options: Partial<EndpointingPolicyOptions>): void {
    this.options = { ...this.options, ...definedOnly(options) };
  }

  get settings(): Readonly<EndpointingPolicyOptions> {
    return this.options;
  }

  /** Judges one window of audio [startMs, startMs + durationMs) with speech probability `p`. */
  step(p: number, startMs: number, durationMs: number): EndpointEvent | undefined {
    const endMs = startMs + durationMs;
    const { threshold, silenceMs, maxTurnMs } = this.options;
    if (this.turnStartMs === undefined) {
      if (p < threshold) {
        this.runStartMs = undefined;
        return undefined;
      }
      this.runStartMs ??= startMs;
      if (endMs - this.runStartMs < ONSET_MS) return undefined;
      this.turnStartMs = this.runStartMs;
      this.runStartMs = undefined;
      this.silenceStartMs = undefined;
      return { type: 'start', onsetMs: this.turnStartMs };
    }
    if (p >= threshold) {
      this.silenceStartMs = undefined;
      if (this.paused) {
        this.paused = false;
        return { type: 'resume' };
      }
    } else if (p < Math.max(threshold - HYSTERESIS, 0.01)) this.silenceStartMs ??= startMs;
    if (this.silenceStartMs !== undefined && endMs - this.silenceStartMs >= silenceMs) {
      const speechEndMs = this.silenceStartMs;
      this.reset();
      return { type: 'stop', endMs, speechEndMs, reason: 'silence' };
    }
    if (endMs - this.turnStartMs >= maxTurnMs) {
      this.reset();
      return { type: 'stop', endMs, speechEndMs: endMs, reason: 'max_length' };
    }
    const { pauseMs } = this.options;
    if (pauseMs !== undefined && !this.paused && this.silenceStartMs !== undefined && endMs - this.silenceStartMs >= pauseMs) {
      this.paused = true;
      return { type: 'pause', silenceStartMs: this.silenceStartMs };
    }
    return undefined;
  }

  /** Forgets the turn in progress, or the speech run that might become one. */
  reset(): void {
    this.turnStartMs = undefined;
    this.runStartMs = undefined;
    this.silenceStartMs = undefined;
    this.paused = false;
  }
}

function definedOnly<T extends object>(o: Partial<T>): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
