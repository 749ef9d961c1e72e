// A costly VAD (Silero: ≈ 0.15 ms per 32 ms window, all call long) run only where a cheap one hears
// sound: WebRTC's VAD (≈ 3 µs per 20 ms frame) in its least aggressive mode looks at each window's
// first and last 20 ms, and the costly VAD judges every window from the first one the gate calls
// voiced until `hangoverMs` after the last. In between — a caller listening in a quiet room, the agent
// talking — a window counts as silence (probability 0) without running the model; the model is told
// of it (`skip`) so the audio context it reads before the next window is right. The hangover outlasts
// Silero's own lag after a voice stops (≈ 80–180 ms), so the silence that ends a turn is still timed
// by Silero; its recurrent state, though, enters each utterance from a shorter history, which moves a
// turn's boundaries by at most one window (test/engines/vad.test.ts).
import type { Vad, VadProvider } from './types.js';
import { WebRtcVad } from './webrtc.js';

/** WebRTC VAD's frame: 20 ms at 16 kHz. */
const FRAME = 320;

/** What the gate needs of the cheap detector: a verdict per 20 ms frame at 16 kHz. */
export interface FrameVad {
  isSpeech(frame16k: Int16Array): boolean;
  close(): void;
}

export class GatedVad implements Vad {
  readonly windowSamples: number;
  /** Windows left to judge with the costly VAD since the gate last heard sound. */
  private open = 0;
  private readonly hangoverWindows: number;
  /** Windows judged by the costly VAD and windows skipped (for the benchmarks and tests). */
  judged = 0;
  skipped = 0;

  constructor(
    private readonly inner: Vad,
    private readonly gate: FrameVad,
    hangoverMs: number,
  ) {
    if (inner.windowSamples < FRAME) throw new Error(`the gate needs windows of at least ${FRAME} samples`);
    this.windowSamples = inner.windowSamples;
    this.hangoverWindows = Math.ceil((hangoverMs * 16) / inner.windowSamples);
  }

  probability(window: Int16Array): number | Promise<number> {
    if (this.hears(window)) this.open = this.hangoverWindows + 1;
    if (this.open > 0) {
      this.open--;
      this.judged++;
      return this.inner.probability(window);
    }
    this.skipped++;
    this.inner.skip?.(window);
    return 0;
  }

  /** The window's first and last 20 ms (they overlap: a 32 ms window is covered whole, no frame waits for the next). */
  private hears(window: Int16Array): boolean {
    const first = this.gate.isSpeech(window.subarray(0, FRAME));
    const last = this.gate.isSpeech(window.subarray(window.length - FRAME));
    return first || last;
  }

  close(): void {
    this.inner.close();
    this.gate.close();
  }
}

/** `inner` judging only where WebRTC's VAD (mode 0: the most willing to call a frame speech) hears sound. */
export function gatedVadProvider(inner: VadProvider, hangoverMs: number): VadProvider {
  return {
    name: `${inner.name}+gate`,
    async create() {
      const [vad, gate] = await Promise.all([inner.create(), WebRtcVad.create(0)]);
      return new GatedVad(vad, gate, hangoverMs);
    },
  };
}
