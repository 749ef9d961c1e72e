// What throws in the media path is reported to its owner, never to the WebRTC stack's callback nor
// to the other calls on the shared clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PeerState, ServerPeer } from '../../src/calls/webrtc/peer/types.ts';
import { MediaSession } from '../../src/calls/webrtc/mediaSession.ts';
import { MediaClock } from '../../src/media/mediaClock.ts';
import { until } from '../helpers/wait.ts';

test('a tick that throws is reported to its subscriber; the other ticks go on', async () => {
  const clock = new MediaClock(5);
  const errors: Error[] = [];
  let healthy = 0;
  const stopBroken = clock.subscribe(() => {
    throw new Error('encoder broke');
  }, (err) => errors.push(err));
  const stopHealthy = clock.subscribe(() => void healthy++, () => assert.fail('the healthy tick never fails'));
  await until('a few ticks', () => healthy, (n) => n >= 5);
  stopBroken();
  stopHealthy();
  assert.ok(errors.length >= 5);
  assert.equal(errors[0]!.message, 'encoder broke');
});

test("a media session reports what throws while handling the stack's packets to its sink", () => {
  let onAudio: (p: Buffer) => void = () => {};
  const peer = {
    onAudioPacket: (cb: (p: Buffer) => void) => void (onAudio = cb),
    onVideoPacket: () => {},
    onStateChange: (_cb: (s: PeerState) => void) => {},
    sendAudioPacket: () => true,
  } as unknown as ServerPeer;
  const failures: Error[] = [];
  new MediaSession(peer, { audioMid: '0', opusPayloadType: 111, mids: ['0'] } as never, 5, {
    audio: () => {},
    agentAudio: () => {},
    video: () => {},
    activity: () => {
      throw new Error('agent bug');
    },
    failure: (err) => failures.push(err),
  });
  assert.doesNotThrow(() => onAudio(Buffer.from([0x80, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xf8])));
  assert.deepEqual(failures.map((e) => e.message), ['agent bug']);
});
