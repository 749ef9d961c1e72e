// WebRTC's VAD (libfvad compiled to WASM) on 20 ms windows at 16 kHz: a yes/no per window, given to
// the endpointing policy as probability 1 or 0.
import fvadModule from '@echogarden/fvad-wasm';
import { rms } from '../../media/audio/level.js';
import type { Vad, VadProvider } from './types.js';

interface FvadModule {
  _fvad_new(): number;
  _fvad_free(inst: number): void;
  _fvad_set_mode(inst: number, mode: number): number;
  _fvad_set_sample_rate(inst: number, rate: number): number;
  _fvad_process(inst: number, ptr: number, length: number): number;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  HEAP16: Int16Array;
}

export type WebRtcVadMode = 0 | 1 | 2 | 3;

const WINDOW = 320;
/** A window this far under the loudest recent speech (−40 dB) is silence, whatever libfvad says. */
const QUIET_RATIO = 0.01;
/** The loudest-speech level halves over about 5 s, so it follows a caller who speaks softer. */
const PEAK_DECAY = 0.5 ** (20 / 5000);

let modulePromise: Promise<FvadModule> | undefined;

export class WebRtcVad implements Vad {
  readonly windowSamples = WINDOW;
  private peak = 0;

  private constructor(
    private readonly m: FvadModule,
    private readonly inst: number,
    private readonly buffer: number,
  ) {}

  /** mode 0 (least aggressive) … 3 (most aggressive about calling audio non-speech). */
  static async create(mode: WebRtcVadMode = 2): Promise<WebRtcVad> {
    modulePromise ??= (fvadModule as unknown as () => Promise<FvadModule>)();
    const m = await modulePromise;
    const inst = m._fvad_new();
    m._fvad_set_mode(inst, mode);
    m._fvad_set_sample_rate(inst, 16_000);
    return new WebRtcVad(m, inst, m._malloc(WINDOW * 2));
  }

  /** libfvad's verdict on a 20 ms frame (320 samples at 16 kHz). */
  isSpeech(frame16k: Int16Array): boolean {
    this.m.HEAP16.set(frame16k.subarray(0, WINDOW), this.buffer >> 1);
    return this.m._fvad_process(this.inst, this.buffer, WINDOW) === 1;
  }

  /**
   * libfvad keeps calling frames speech for 100–200 ms after the voice stops (its hangover): a
   * window 40 dB under the loudest recent speech counts as silence, so the silence is timed from
   * when the voice really stopped.
   */
  probability(window: Int16Array): number {
    const voiced = this.isSpeech(window);
    const level = rms(window);
    this.peak *= PEAK_DECAY;
    if (voiced) this.peak = Math.max(this.peak, level);
    return voiced && level > this.peak * QUIET_RATIO ? 1 : 0;
  }

  close(): void {
    this.m._free(this.buffer);
    this.m._fvad_free(this.inst);
  }
}

export function webrtcVadProvider(mode: WebRtcVadMode): VadProvider {
  return { name: 'webrtc', create: () => WebRtcVad.create(mode) };
}
