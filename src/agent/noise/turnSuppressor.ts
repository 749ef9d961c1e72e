// Noise suppression of the caller's turns only (what the recogniser hears), not all call long: the
// VAD judges the audio as it came, so between turns nobody needs it suppressed. RNNoise adapts to the
// room as it listens, so before each turn it is run, unheard, over the second of audio before the
// turn's prefix padding: it starts the turn settled on the noise of now, not of the last turn.
import type { NoiseSuppressor } from './suppressor.js';

/** Audio kept for the warm-up before each turn. */
const WARM_UP_MS = 1000;

export class TurnSuppressor {
  /** The caller's latest audio (16 kHz), newest last, and the ms of the call its first sample is at. */
  private recent: Int16Array[] = [];
  private recentStartMs = 0;
  private recentSamples = 0;

  /** `startMs`: where the call's audio clock stands when it starts (a session may turn it on mid-call). */
  constructor(
    readonly suppressor: NoiseSuppressor,
    startMs = 0,
    private readonly ratePerMs = 16,
  ) {
    this.recentStartMs = startMs;
  }

  /** Every frame of the caller's audio, in order (kept for the next warm-up). */
  heard(frame: Int16Array): void {
    this.recent.push(frame);
    this.recentSamples += frame.length;
    while (this.recent.length > 1 && this.recentSamples - this.recent[0]!.length >= (WARM_UP_MS + 500) * this.ratePerMs) {
      const dropped = this.recent.shift()!;
      this.recentSamples -= dropped.length;
      this.recentStartMs += dropped.length / this.ratePerMs;
    }
  }

  /** A turn starts with audio from `audioStartMs` on: the suppressor hears the second before it, unheard. */
  turnStarts(audioStartMs: number): void {
    const from = Math.max(0, Math.round((audioStartMs - WARM_UP_MS - this.recentStartMs) * this.ratePerMs));
    const to = Math.max(0, Math.round((audioStartMs - this.recentStartMs) * this.ratePerMs));
    let at = 0;
    for (const frame of this.recent) {
      const a = Math.max(from - at, 0);
      const b = Math.min(to - at, frame.length);
      if (a < b) this.suppressor.process(frame.subarray(a, b));
      at += frame.length;
      if (at >= to) break;
    }
  }

  /** The turn's audio, suppressed (20 ms late: its first 20 ms are the warm-up's last). */
  process(pcm: Int16Array): Int16Array {
    return this.suppressor.process(pcm);
  }

  close(): void {
    this.suppressor.close();
    this.recent = [];
  }
}
