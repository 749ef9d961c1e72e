// The recordings' timeline: both channels follow the clock, pieces continue their channel, a gap
// longer than the slack becomes silence, audio played ahead waits its time, and too much ahead is dropped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StereoTimeline } from '../../src/recordings/stereoTimeline.ts';

const FRAME = 960;
const LIMITS = { slack: 150 * 48, delay: 300 * 48, maxAhead: 2000 * 48 };

/** A timeline whose emitted frames are split back into the left and right channels. */
function timeline() {
  const left: number[] = [];
  const right: number[] = [];
  const t = new StereoTimeline(LIMITS, (stereo) => {
    assert.equal(stereo.length, 2 * FRAME);
    for (let i = 0; i < stereo.length; i += 2) {
      left.push(stereo[i]!);
      right.push(stereo[i + 1]!);
    }
  });
  return { t, left, right };
}

const filled = (value: number, n = FRAME) => new Int16Array(n).fill(value);

test('caller frames arriving on time follow each other; frames are taken only once the delay has passed', () => {
  const { t, left, right } = timeline();
  for (let k = 1; k <= 10; k++) t.place(0, filled(k), k * FRAME - FRAME, k * FRAME);
  assert.equal(left.length, 0, 'nothing taken within the first 300 ms');
  t.finish(10 * FRAME);
  assert.equal(left.length, 10 * FRAME);
  for (let k = 1; k <= 10; k++) assert.equal(left[(k - 1) * FRAME + 5], k);
  assert.ok(right.every((s) => s === 0), 'the silent channel is silence');
});

test('a pause longer than the slack becomes silence, and the audio after it lands at its time', () => {
  const { t, left } = timeline();
  t.place(0, filled(1), 0, FRAME);
  // The next frame comes a second later.
  const at = 49 * FRAME;
  t.place(0, filled(2), at, at + FRAME);
  t.finish(at + FRAME);
  assert.equal(left.length, 50 * FRAME);
  assert.equal(left[10], 1);
  assert.equal(left[FRAME + 10], 0, 'silence in the pause');
  assert.equal(left[at - 1], 0);
  assert.equal(left[at], 2, 'the frame after the pause at its wall-clock time');
});

test("a channel's first piece is placed at its time, even within the slack", () => {
  const { t, left } = timeline();
  t.place(0, filled(1), 3 * FRAME, 4 * FRAME);
  t.finish(4 * FRAME);
  assert.equal(left[3 * FRAME - 1], 0);
  assert.equal(left[3 * FRAME], 1);
});

test('a late frame within the slack continues its channel (no gap for jitter)', () => {
  const { t, left } = timeline();
  t.place(0, filled(1), 0, FRAME);
  t.place(0, filled(2), 3 * FRAME, 4 * FRAME); // 40 ms late
  t.finish(4 * FRAME);
  assert.equal(left[FRAME + 1], 2, 'right after the first');
});

test('a burst after an event-loop stall lands at its time: the silence put in for its first frame is taken out again', () => {
  const { t, left } = timeline();
  // Frames 0–9 arrive on time; then nothing for 270 ms; then frames 10–23 at once; then on time again.
  for (let k = 0; k < 10; k++) t.placeArrived(0, filled(k + 1), (k + 1) * FRAME);
  const burstAt = 24 * FRAME;
  for (let k = 10; k < 24; k++) t.placeArrived(0, filled(k + 1), burstAt);
  for (let k = 24; k < 40; k++) t.placeArrived(0, filled(k + 1), (k + 1) * FRAME);
  t.finish(40 * FRAME);
  for (let k = 0; k < 40; k++) assert.equal(left[k * FRAME + 5], k + 1, `frame ${k} at its time`);
});

test('a real pause stays silence when the audio after it comes on time', () => {
  const { t, left } = timeline();
  t.placeArrived(0, filled(1), FRAME);
  for (let k = 30; k < 35; k++) t.placeArrived(0, filled(2), (k + 1) * FRAME);
  t.finish(35 * FRAME);
  assert.equal(left[5 * FRAME], 0, 'silence in the pause');
  assert.equal(left[29 * FRAME + 5], 0);
  assert.equal(left[30 * FRAME + 5], 2, 'the audio after the pause at its time');
});

test("agent audio handed over faster than real time plays from its start on, aligned with the caller's", () => {
  const { t, left, right } = timeline();
  t.place(0, filled(7), 0, FRAME);
  // At 200 ms (past the slack), a second of the agent's speech at once (a client plays it from now).
  const now = 10 * FRAME;
  t.place(1, filled(3, 50 * FRAME), now, now);
  t.finish(now + 50 * FRAME);
  assert.equal(right[now - 1], 0);
  assert.equal(right[now], 3);
  assert.equal(right[now + 50 * FRAME - 1], 3);
  assert.equal(left[0], 7);
  assert.equal(left.length, right.length);
});

test('audio more than maxAhead ahead of the clock is dropped and counted', () => {
  const { t, right } = timeline();
  t.place(1, filled(3, 90 * FRAME), 0, 0);
  t.place(1, filled(4, 20 * FRAME), 0, 0);
  assert.equal(t.droppedSamples, 20 * FRAME);
  t.finish(120 * FRAME);
  assert.equal(right[90 * FRAME - 1], 3);
  assert.equal(right[90 * FRAME], 0);
});
