// Synthetic 48 kHz mono PCM for the stage tests: silence, tones, noise, and frames of it.
export const RATE = 48_000;

export function silence(ms: number): Int16Array {
  return new Int16Array((ms * RATE) / 1000);
}

export function tone(ms: number, hz = 440, amplitude = 8000): Int16Array {
  const out = new Int16Array((ms * RATE) / 1000);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / RATE));
  return out;
}

/** White noise from a fixed seed (the same samples every run). */
export function noise(ms: number, amplitude = 1000, seed = 1): Int16Array {
  const out = new Int16Array((ms * RATE) / 1000);
  let x = seed;
  for (let i = 0; i < out.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = Math.round(((x / 0x7fffffff) * 2 - 1) * amplitude);
  }
  return out;
}

export function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `pcm` cut into frames of `ms` milliseconds (the last one shorter when it does not divide). */
export function frames(pcm: Int16Array, ms: number): Int16Array[] {
  const n = (ms * RATE) / 1000;
  const out: Int16Array[] = [];
  for (let i = 0; i < pcm.length; i += n) out.push(pcm.subarray(i, Math.min(pcm.length, i + n)));
  return out;
}

export function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / (pcm.length || 1));
}
