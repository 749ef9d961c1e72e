// A WebSocket client's playout as the server keeps it: audio sent plays at real-time rate from when
// it was sent, after what was sent before; playback finishes at the timeline's end, or where it was
// when the client was told to stop.
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { PlayoutTimeline } from '../../src/calls/websocket/playoutTimeline.ts';
import { WebSocketTransport } from '../../src/calls/websocket/websocketTransport.ts';

/** A timeline on a clock the test moves, its end timer mocked with it. */
function timeline() {
  let now = 1000;
  const t = new PlayoutTimeline(() => now);
  const told: unknown[] = [];
  t.onPlayback({ playbackStarted: () => told.push('started'), playbackFinished: (f) => told.push(f) });
  const wait = (ms: number) => {
    now += ms;
    mock.timers.tick(ms);
  };
  return { t, told, wait };
}

test('what is sent plays from when it was sent, pieces back to back; playback finishes at the end', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { t, told, wait } = timeline();
    t.sent(500);
    assert.deepEqual(told, ['started']);
    assert.equal(t.queuedMs, 500);
    wait(200);
    t.sent(500);
    assert.equal(t.queuedMs, 800, 'the second piece plays after the first');
    wait(799);
    assert.equal(told.length, 1, 'not finished while audio is due');
    wait(1);
    assert.deepEqual(told, ['started', { playbackPositionMs: 1000, interrupted: false }]);
    assert.equal(t.queuedMs, 0);
    wait(300);
    t.sent(100);
    assert.equal(t.queuedMs, 100, 'after a silence a piece plays from when it is sent');
    assert.equal(told.at(-1), 'started');
  } finally {
    mock.timers.reset();
  }
});

test('stopped (barge-in, the call ends): playback finishes interrupted where it had reached, and not again', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { t, told, wait } = timeline();
    t.stop();
    assert.deepEqual(told, [], 'nothing playing: nothing to tell');
    t.sent(1000);
    wait(300);
    t.stop();
    assert.deepEqual(told, ['started', { playbackPositionMs: 300, interrupted: true }]);
    assert.equal(t.queuedMs, 0);
    wait(2000);
    assert.equal(told.length, 2);
  } finally {
    mock.timers.reset();
  }
});

test("the WebSocket transport's audio out, unpaced (lead 0): sent at once inside events, queued until due, nothing dropped by clear", async () => {
  const transport = new WebSocketTransport(1 << 20, 0);
  const sent: string[] = [];
  transport.eventAudio.onOutput((audio) => sent.push(audio));
  const told: unknown[] = [];
  transport.audioOut.onPlayback({ playbackStarted: () => told.push('started'), playbackFinished: (f) => told.push(f.interrupted) });
  transport.audioOut.write(new Int16Array(48_000));
  assert.equal(sent.length, 1, 'handed to the client at once');
  assert.ok(transport.audioOut.queuedMs > 900, 'a second of audio is not heard at once');
  assert.equal(transport.audioOut.clear(), 0, "what was sent is the client's");
  assert.equal(transport.audioOut.queuedMs, 0);
  assert.deepEqual(told, ['started', true]);
  await transport.close('test');
});

test("the WebSocket transport's audio out, paced: 100 ms pieces up to the lead at once, the rest later; clear drops what was not sent; sent() waits for the last piece", async () => {
  const transport = new WebSocketTransport(1 << 20, 300);
  const sent: string[] = [];
  transport.eventAudio.onOutput((audio) => sent.push(audio));
  transport.audioOut.write(new Int16Array(48_000));
  assert.equal(sent.length, 3, 'the lead (300 ms) at once, in 100 ms pieces');
  assert.ok(sent.every((a) => Buffer.from(a, 'base64').length === 4800), '100 ms of 24 kHz PCM16 each');
  assert.ok(transport.audioOut.queuedMs > 900, 'what is not sent is still to be heard');
  let allSent = false;
  const waiting = transport.audioOut.sent!().then(() => (allSent = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(allSent, false);
  const dropped = transport.audioOut.clear();
  assert.ok(dropped >= 600 && dropped <= 700, `the unsent 700 ms or a little less were dropped: ${dropped}`);
  await waiting;
  assert.equal(transport.audioOut.queuedMs, 0);
  await transport.close('test');
});
