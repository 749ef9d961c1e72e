// AudioSender: one packet per tick while audio is queued, marker bit on each talk spurt's first
// packet, timestamps that follow the clock through silences, two silent frames after a barge-in,
// and the playback events of what it sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AudioSender } from '../../src/media/audioSender.ts';
import type { MediaClock } from '../../src/media/mediaClock.ts';
import { readRtp } from '../../src/media/rtp.ts';

function sender() {
  const sent: Buffer[] = [];
  let tick = () => {};
  const clock = { subscribe: (t: () => void) => ((tick = t), () => {}) } as unknown as MediaClock;
  const s = new AudioSender((p) => (sent.push(p), true), 0x1234, 111, { clock });
  s.start();
  return { s, sent, tick: (n = 1) => Array.from({ length: n }, () => tick()), rtp: () => sent.map((p) => readRtp(p)!) };
}

const tone = (samples: number) => Int16Array.from({ length: samples }, (_, i) => Math.round(6000 * Math.sin(i / 10)));

test('a talk spurt: one packet per tick, the marker on its first, sequence and timestamp stepping by one frame', () => {
  const { s, tick, rtp } = sender();
  s.write(tone(960 * 3));
  tick(5);
  const p = rtp();
  assert.equal(p.length, 3);
  assert.deepEqual(p.map((x) => x.marker), [true, false, false]);
  assert.deepEqual(p.map((x) => (x.sequenceNumber - p[0]!.sequenceNumber) & 0xffff), [0, 1, 2]);
  assert.deepEqual(p.map((x) => (x.timestamp - p[0]!.timestamp) >>> 0), [0, 960, 1920]);
  assert.ok(p.every((x) => x.payloadType === 111 && x.ssrc === 0x1234 && x.payload.length > 0));
  assert.equal(s.packets, 3);
});

test('after a silence the next spurt has the marker again and its timestamp counts the silent ticks', () => {
  const { s, tick, rtp } = sender();
  s.write(tone(960));
  tick(1);
  tick(4); // nothing queued: nothing sent, the clock runs on
  s.write(tone(960));
  tick(1);
  const [a, b] = rtp();
  assert.equal(b!.marker, true);
  assert.equal((b!.timestamp - a!.timestamp) >>> 0, 5 * 960);
  assert.equal((b!.sequenceNumber - a!.sequenceNumber) & 0xffff, 1, 'no sequence gap for silence');
});

test('a partial frame at the end of an utterance is sent padded; playback starts with the first packet and finishes once the queue runs dry', () => {
  const { s, tick, rtp } = sender();
  const told: unknown[] = [];
  s.onPlayback({ playbackStarted: () => told.push('started'), playbackFinished: (f) => told.push(f) });
  s.write(tone(960 + 100));
  assert.equal(s.queuedMs, (960 + 100) / 48);
  assert.deepEqual(told, [], 'nothing is heard before it is sent');
  tick(2);
  assert.equal(rtp().length, 2);
  assert.deepEqual(told, ['started']);
  tick(1);
  assert.deepEqual(told, ['started', { playbackPositionMs: 40, interrupted: false }]);
});

test('what is written is copied: the writer may reuse its buffer', () => {
  const { s, tick, rtp } = sender();
  const buf = tone(960);
  s.write(buf);
  buf.fill(0);
  const quiet = sender();
  quiet.s.write(new Int16Array(960));
  tick(1);
  quiet.tick(1);
  assert.ok(rtp()[0]!.payload.length > quiet.rtp()[0]!.payload.length + 10, 'the tone was sent, not the zeros written over it');
});

test('clear() while talking drops the queue and sends two frames of silence to end the utterance', () => {
  const { s, tick, rtp } = sender();
  s.write(tone(960 * 50));
  tick(2);
  const finished: unknown[] = [];
  s.onPlayback({ playbackFinished: (f) => finished.push(f) });
  const dropped = s.clear();
  assert.equal(dropped, 48 * 20);
  assert.deepEqual(finished, [{ playbackPositionMs: 40, interrupted: true }], 'the caller heard 40 ms of it');
  tick(5);
  assert.equal(rtp().length, 4, 'two packets of speech, then two of silence, then nothing');
  assert.equal(s.queuedMs, 0);
  assert.equal(finished.length, 1, 'the silence that ends it is not a playback of its own');
});

test('clear() before anything was sent tells of no playback; what is written after a clear starts one anew', () => {
  const { s, tick } = sender();
  const told: unknown[] = [];
  s.onPlayback({ playbackStarted: () => told.push('started'), playbackFinished: (f) => told.push(f) });
  s.write(tone(960 * 5));
  s.clear();
  assert.deepEqual(told, []);
  s.write(tone(960 * 5));
  tick(2);
  s.clear();
  s.write(tone(960));
  tick(6);
  assert.deepEqual(told, ['started', { playbackPositionMs: 40, interrupted: true }, 'started', { playbackPositionMs: 20, interrupted: false }]);
});
