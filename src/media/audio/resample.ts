// Sample-rate conversion for speech: 48 kHz call audio to the 16 kHz speech recogniser and VAD (at
// the transport's edge), and synthesiser output (16 / 22.05 kHz) up to 48 kHz.

/** 48 kHz → 16 kHz: a 3-tap average (a cheap low-pass) then every third sample. */
export function downsample48kTo16k(input: Int16Array): Int16Array {
  const out = new Int16Array(Math.floor(input.length / 3));
  for (let i = 0, j = 0; j < out.length; i += 3, j++) out[j] = ((input[i]! + input[i + 1]! + input[i + 2]!) / 3) | 0;
  return out;
}

/** Any rate → 48 kHz by linear interpolation (upsampling speech; no aliasing to remove). */
export function resampleTo48k(input: Int16Array, fromRate: number): Int16Array {
  if (fromRate === 48_000) return input;
  const ratio = fromRate / 48_000;
  const out = new Int16Array(Math.floor(input.length / ratio));
  for (let j = 0; j < out.length; j++) {
    const pos = j * ratio;
    const i = Math.floor(pos);
    const frac = pos - i;
    const a = input[i] ?? 0;
    const b = input[i + 1] ?? a;
    out[j] = Math.round(a + (b - a) * frac);
  }
  return out;
}

/**
 * A caller's frames at `fromRate` as frames at `toRate`: as they are when the rates match, averaged
 * and decimated when `toRate` divides `fromRate` (48 → 16 kHz as downsample48kTo16k), and
 * interpolated, continuing across frames, otherwise (8 kHz telephony up to 16 kHz).
 */
export function frameConverter(fromRate: number, toRate: number): (frame: Int16Array) => Int16Array {
  if (fromRate === toRate) return (frame) => frame;
  const factor = fromRate / toRate;
  if (Number.isInteger(factor)) {
    return (input) => {
      const out = new Int16Array(Math.floor(input.length / factor));
      for (let i = 0, j = 0; j < out.length; j++) {
        let sum = 0;
        for (let k = 0; k < factor; k++) sum += input[i++]!;
        out[j] = (sum / factor) | 0;
      }
      return out;
    };
  }
  const resampler = new StreamResampler(fromRate, toRate);
  return (frame) => resampler.push(frame);
}

/**
 * Any rate → another by linear interpolation (48 kHz unless said), for audio arriving in pieces (a
 * streamed HTTP body, a call's frames): each piece is converted as it comes, continuing exactly
 * where the last one left off.
 */
export class StreamResampler {
  private readonly step: number;
  /** Input samples received and output samples made so far. */
  private received = 0;
  private produced = 0;
  /** The last sample of the previous piece. */
  private last = 0;

  constructor(fromRate: number, toRate = 48_000) {
    this.step = fromRate / toRate;
  }

  push(piece: Int16Array): Int16Array {
    const total = this.received + piece.length;
    // Input sample `g` of the whole stream: the previous piece's last, or one of this piece.
    const sample = (g: number) => (g < this.received ? this.last : piece[g - this.received]!);
    const out = new Int16Array(Math.max(0, Math.ceil((total - 1) / this.step) - this.produced));
    let n = 0;
    for (; n < out.length; n++) {
      // The output sample's position in the input, computed as resampleTo48k does (no drift).
      const pos = this.produced * this.step;
      const i = Math.floor(pos);
      if (i + 1 > total - 1) break;
      const a = sample(i);
      out[n] = Math.round(a + (sample(i + 1) - a) * (pos - i));
      this.produced++;
    }
    this.received = total;
    if (piece.length) this.last = piece[piece.length - 1]!;
    return n === out.length ? out : out.subarray(0, n);
  }
}
