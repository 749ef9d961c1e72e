// Reframer: chunks of any length in, fixed frames out, nothing lost or reordered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Reframer } from '../../src/media/audio/reframer.ts';

/** PCM whose every sample is its own index (mod 2^15), so order and losses show. */
const ramp = (from: number, n: number) => Int16Array.from({ length: n }, (_, i) => (from + i) % 32768);

function collect(frameSamples: number) {
  const frames: Int16Array[] = [];
  return { frames, reframer: new Reframer(frameSamples, (f) => frames.push(f)) };
}

for (const chunk of [480, 960, 1920, 2880, 100, 1000]) {
  test(`chunks of ${chunk} samples come out as 960-sample frames, every sample once and in order`, () => {
    const { frames, reframer } = collect(960);
    let sent = 0;
    for (let i = 0; i < 30; i++) {
      reframer.push(ramp(sent, chunk));
      sent += chunk;
    }
    assert.equal(frames.length, Math.floor(sent / 960));
    assert.ok(frames.every((f) => f.length === 960));
    const out = new Int16Array(frames.length * 960);
    frames.forEach((f, i) => out.set(f, i * 960));
    assert.deepEqual(out, ramp(0, out.length));
    assert.equal(reframer.pending, sent % 960);
  });
}

test('a frame that straddles two chunks is a copy; one that lies whole in a chunk is a view of it', () => {
  const { frames, reframer } = collect(4);
  const a = Int16Array.from([1, 2, 3, 4, 5, 6]);
  const b = Int16Array.from([7, 8, 9, 10, 11, 12]);
  reframer.push(a);
  reframer.push(b);
  assert.deepEqual(frames.map((f) => [...f]), [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]);
  assert.equal(frames[0]!.buffer, a.buffer);
  assert.notEqual(frames[1]!.buffer, a.buffer);
  assert.notEqual(frames[1]!.buffer, b.buffer);
  assert.equal(frames[2]!.buffer, b.buffer);
});

test('flush pads the held-back samples with silence; clear forgets them', () => {
  const { frames, reframer } = collect(4);
  reframer.push(Int16Array.from([9, 8, 7, 6, 5]));
  assert.equal(frames.length, 1);
  assert.deepEqual([...reframer.flush()!], [5, 0, 0, 0]);
  assert.equal(reframer.flush(), undefined);
  reframer.push(Int16Array.from([1, 2]));
  reframer.clear();
  assert.equal(reframer.pending, 0);
  reframer.push(Int16Array.from([3, 4, 5, 6]));
  assert.deepEqual([...frames.at(-1)!], [3, 4, 5, 6]);
});
