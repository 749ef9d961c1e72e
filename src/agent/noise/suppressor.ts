// Noise suppression of the caller's audio before the VAD and the recogniser hear it. The voice agent
// hears 16 kHz; RNNoise works on 10 ms frames at 48 kHz, so each 10 ms is interpolated up ×3,
// denoised, and averaged back down (the band above 8 kHz that the interpolation leaves nearly empty
// is dropped again). Each piece comes out as long as it went in, 20 ms late (the chunk being filled,
// and RNNoise's own frame), so the suppressed audio stays aligned with the audio as it came.
import type { NoiseReduction } from '../../session/session.js';
import { RNNOISE_FRAME, createRnnoiseState, type RnnoiseState } from './rnnoise.js';

/** 10 ms at 16 kHz. */
const CHUNK = 160;

export interface NoiseSuppressor {
  readonly type: NoiseReduction;
  /** 16 kHz mono in, as many samples out, 20 ms late (10 ms of chunking, 10 ms RNNoise's own). */
  process(pcm16k: Int16Array): Int16Array;
  close(): void;
}

/**
 * Both of OpenAI's types run the one model there is. far_field once also damped what RNNoise found
 * unvoiced (−12 dB): the recogniser did worse for it (bench/noise.ts: WER 28 % against 23 % in pink
 * noise at 20 dB), so it no longer does.
 */
export function createNoiseSuppressor(type: NoiseReduction): NoiseSuppressor {
  const state: RnnoiseState = createRnnoiseState();
  const frame = new Float32Array(RNNOISE_FRAME);
  /** 16 kHz samples not yet making a whole chunk. */
  const pending = new Int16Array(CHUNK);
  let pendingLength = 0;
  /** Denoised samples not yet handed out: always CHUNK − pendingLength of them. */
  let ready = new Int16Array(CHUNK);
  /** The previous chunk's last sample (the interpolation continues across chunks). */
  let last = 0;
  let closed = false;

  const denoiseChunk = (chunk: Int16Array, out: Int16Array, at: number) => {
    for (let i = 0; i < CHUNK; i++) {
      const x = chunk[i]!;
      const d = x - last;
      frame[3 * i] = last + d / 3;
      frame[3 * i + 1] = last + (2 * d) / 3;
      frame[3 * i + 2] = x;
      last = x;
    }
    state.process(frame);
    for (let i = 0; i < CHUNK; i++) {
      const v = (frame[3 * i]! + frame[3 * i + 1]! + frame[3 * i + 2]!) / 3;
      out[at + i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
    }
  };

  return {
    type,
    process(pcm) {
      if (closed) return pcm;
      const whole = Math.floor((pendingLength + pcm.length) / CHUNK);
      const denoised = new Int16Array(ready.length + whole * CHUNK);
      denoised.set(ready);
      let at = ready.length;
      let i = 0;
      if (pendingLength > 0) {
        const n = Math.min(CHUNK - pendingLength, pcm.length);
        pending.set(pcm.subarray(0, n), pendingLength);
        pendingLength += n;
        i = n;
        if (pendingLength === CHUNK) {
          denoiseChunk(pending, denoised, at);
          at += CHUNK;
          pendingLength = 0;
        }
      }
      if (pendingLength === 0) {
        for (; i + CHUNK <= pcm.length; i += CHUNK, at += CHUNK) denoiseChunk(pcm.subarray(i, i + CHUNK), denoised, at);
        pending.set(pcm.subarray(i), 0);
        pendingLength = pcm.length - i;
      }
      ready = denoised.slice(pcm.length);
      return denoised.subarray(0, pcm.length);
    },
    close() {
      if (closed) return;
      closed = true;
      state.destroy();
    },
  };
}
