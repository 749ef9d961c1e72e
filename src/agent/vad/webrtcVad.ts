// Voice activity detection: WebRTC's VAD (libfvad compiled to WASM), on 20 ms frames at 16 kHz.
import fvadModule from '@echogarden/fvad-wasm';

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

let modulePromise: Promise<FvadModule> | undefined;

export class WebRtcVad {
  private constructor(
    private readonly m: FvadModule,
    private readonly inst: number,
    private readonly buffer: number,
  ) {}

  /** mode 0 (least aggressive) … 3 (most aggressive about calling audio non-speech). */
  static async create(mode: 0 | 1 | 2 | 3 = 2): Promise<WebRtcVad> {
    modulePromise ??= (fvadModule as unknown as () => Promise<FvadModule>)();
    const m = await modulePromise;
    const inst = m._fvad_new();
    m._fvad_set_mode(inst, mode);
    m._fvad_set_sample_rate(inst, 16_000);
    return new WebRtcVad(m, inst, m._malloc(320 * 2));
  }

  /** True when the 20 ms frame (320 samples at 16 kHz) holds speech. */
  isSpeech(frame16k: Int16Array): boolean {
    this.m.HEAP16.set(frame16k.subarray(0, 320), this.buffer >> 1);
    return this.m._fvad_process(this.inst, this.buffer, 320) === 1;
  }

  close(): void {
    this.m._free(this.buffer);
    this.m._fvad_free(this.inst);
  }
}
