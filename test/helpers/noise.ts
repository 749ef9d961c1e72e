// Noisy rooms for the noise and echo tests and bench/noise.ts, made here with sox and flite (nothing
// recorded, nothing downloaded): pink and brown noise, babble (several voices talking over each
// other), and speech mixed with them at a chosen signal-to-noise ratio. Mono 16-bit PCM at `rate`.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type NoiseKind = 'pink' | 'brown' | 'babble';

/** What the babble's voices say: none of the benchmark's or tests' sentences. */
const BABBLE = [
  { voice: 'kal', text: 'So we went down to the market on Saturday and the whole place was full of people selling old records and books.' },
  { voice: 'awb', text: 'I told him the meeting would have to move to Thursday because half of the team is away until then.' },
  { voice: 'rms', text: 'The coffee here used to be much better before they changed the machines, or maybe it is just me.' },
  { voice: 'slt', text: 'Did you see the game last night? They were losing at half time and then came back in the last minutes.' },
  { voice: 'kal', text: 'My sister is moving to a new flat near the river, so we are all helping her carry boxes next week.' },
];

function raw(file: string): Int16Array {
  const bytes = readFileSync(file);
  return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

const cache = new Map<string, Int16Array>();

/** `ms` of noise of a kind, the same samples every run (sox in repeatable mode; babble looped). */
export function noiseOf(kind: NoiseKind, ms: number, rate = 48_000): Int16Array {
  const key = `${kind}/${rate}`;
  let base = cache.get(key);
  if (!base) {
    const dir = mkdtempSync(join(tmpdir(), 'parley-noise-'));
    try {
      const out = join(dir, 'out.raw');
      const format = ['-r', String(rate), '-c', '1', '-b', '16', '-e', 'signed-integer'];
      if (kind === 'babble') {
        // Five talkers, each starting at a different point of their sentence, mixed and looped.
        const parts = BABBLE.map((b, i) => {
          const wav = join(dir, `v${i}.wav`);
          const looped = join(dir, `l${i}.wav`);
          execFileSync('flite', ['-voice', b.voice, '-t', b.text, '-o', wav]);
          execFileSync('sox', [wav, ...format, looped, 'trim', String(i * 0.7), 'repeat', '3']);
          return looped;
        });
        execFileSync('sox', ['-m', ...parts, ...format, '-t', 'raw', out, 'trim', '0', '10', 'norm', '-20']);
      } else {
        execFileSync('sox', ['-R', '-n', ...format, '-t', 'raw', out, 'synth', '10', kind === 'pink' ? 'pinknoise' : 'brownnoise', 'norm', '-20']);
      }
      base = raw(out);
      cache.set(key, base);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const n = Math.round((ms * rate) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = base[i % base.length]!;
  return out;
}

/** The level of speech while it is spoken: the RMS over its 10 ms frames within 30 dB of the loudest. */
export function speechLevel(pcm: Int16Array, rate = 48_000): number {
  const n = rate / 100;
  const levels: number[] = [];
  for (let i = 0; i + n <= pcm.length; i += n) {
    let sum = 0;
    for (let k = i; k < i + n; k++) sum += pcm[k]! * pcm[k]!;
    levels.push(sum / n);
  }
  const peak = Math.max(...levels);
  const active = levels.filter((l) => l > peak / 1000);
  return Math.sqrt(active.reduce((a, b) => a + b, 0) / (active.length || 1));
}

export function rmsOf(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / (pcm.length || 1));
}

/** `noise` scaled so that `speech` (at its speech level) is `snrDb` above it. */
export function noiseFor(speech: Int16Array, noise: Int16Array, snrDb: number, rate = 48_000): Int16Array {
  const gain = speechLevel(speech, rate) / (rmsOf(noise) * 10 ** (snrDb / 20));
  return noise.map((x) => Math.max(-32768, Math.min(32767, Math.round(x * gain))));
}

/** `a` and `b` added sample by sample (the longer one's length), clipped to 16 bits. */
export function mix(a: Int16Array, b: Int16Array): Int16Array {
  const out = new Int16Array(Math.max(a.length, b.length));
  for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, (a[i] ?? 0) + (b[i] ?? 0)));
  return out;
}
