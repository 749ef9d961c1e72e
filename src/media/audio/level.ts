// How loud a piece of 16-bit PCM is.

/** The level of digital silence, in dBFS (a floor for the logarithm). */
export const SILENT_DB = -100;

/** Root mean square of the samples (0 for none). */
export function rms(pcm: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += pcm[i]! * pcm[i]!;
  return Math.sqrt(sum / (pcm.length || 1));
}

/** The level in dBFS (SILENT_DB for digital silence). */
export function levelDb(pcm: Int16Array): number {
  const r = rms(pcm);
  return r ? Math.max(SILENT_DB, 20 * Math.log10(r / 32768)) : SILENT_DB;
}
