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

test("the WebSocket transport's audio out: sent at once inside events, queued until due, nothing dropped by clear", async () => {
  const transport = new WebSocketTransport(1 << 20);
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
