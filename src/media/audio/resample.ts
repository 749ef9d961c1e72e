// Sample-rate conversion for speech: 48 kHz call audio to the 16 kHz speech recogniser and VAD,
// and synthesiser output (16 / 22.05 kHz) up to 48 kHz.

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
