import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createNoiseSuppressor } from '../../src/agent/noise/suppressor.ts';
import { noise, rms } from '../helpers/pcm.ts';
import { speak } from '../helpers/speech.ts';

/** 16 kHz audio through a suppressor in 20 ms frames, as the voice agent feeds it. */
function suppress(pcm: Int16Array, type: 'near_field' | 'far_field' = 'near_field'): Int16Array {
  const s = createNoiseSuppressor(type);
  const out: Int16Array[] = [];
  for (let i = 0; i < pcm.length; i += 320) out.push(s.process(pcm.subarray(i, Math.min(pcm.length, i + 320))));
  s.close();
  const joined = new Int16Array(out.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of out) joined.set(f, (at += f.length) - f.length);
  return joined;
}

const db = (a: number, b: number) => 20 * Math.log10(a / b);

test('the suppressor gives back as many samples as it was given, piece by piece, 20 ms late', () => {
  const s = createNoiseSuppressor('near_field');
  // Pieces of any length (a WebSocket's resampled audio is not cut in 10 ms).
  const sizes = [320, 320, 100, 219, 161, 7, 480, 1];
  assert.deepEqual(sizes.map((n) => s.process(new Int16Array(n).fill(1000)).length), sizes);
  s.close();
  // A click comes out 320 samples (20 ms) later than it went in: 10 ms of chunking, RNNoise's own 10 ms.
  const click = new Int16Array(3200);
  click.fill(8000, 1600, 1700);
  const out = suppress(click);
  const loudest = (pcm: Int16Array) => pcm.reduce((best, x, i) => (Math.abs(x) > Math.abs(pcm[best]!) ? i : best), 0);
  assert.ok(Math.abs(loudest(out) - loudest(click) - 320) < 40, `click at ${loudest(click)} came out at ${loudest(out)}`);
});

test('steady noise is taken down by more than 15 dB, speech keeps its level within 3 dB', () => {
  // White noise at 16 kHz (every other second of the 48 kHz helper's samples are as random).
  const hiss = noise(3000, 3000).subarray(0, 48_000);
  const cleaned = suppress(hiss).subarray(16_000);
  assert.ok(db(rms(hiss.subarray(16_000)), rms(cleaned)) > 15, `noise down ${db(rms(hiss.subarray(16_000)), rms(cleaned)).toFixed(1)} dB`);
  const speech = speak('please tell me what time it is', 16_000);
  const kept = suppress(speech);
  assert.ok(Math.abs(db(rms(speech), rms(kept))) < 3, `speech changed ${db(rms(speech), rms(kept)).toFixed(1)} dB`);
});
