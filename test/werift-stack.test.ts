// The second server-side WebRTC stack (WEBRTC_STACK=werift) carries a whole call like the default one:
// audio+video offer, data-channel protocol, echoed audio on the SSRC the answer announces, hang-up.
// (The full suites pass against it too: WEBRTC_STACK=werift node --import tsx --test test/calls.test.ts.)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import sdpTransform from 'sdp-transform';
import { attachCamera, attachTone, inboundAudio, listen, openCall } from './helpers/rtcClient.ts';
import { http, metric, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';


let server: RunningServer;
before(async () => {
  server = await startServer({ WEBRTC_STACK: 'werift' });
});
after(async () => {
  await server.stop();
});

test('werift: audio+video echo call with the data channel, echoed audio on the announced SSRC, hang-up recorded', async () => {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { video: true, params: { model: 'audio-echo', modalities: ['audio', 'video'] } });
  try {
    // libdatachannel signs its SDP "o=rtc"; werift does not — the setting really switched stacks.
    assert.doesNotMatch(client.answerSdp, /^o=rtc /m);
    const answer = sdpTransform.parse(client.answerSdp);
    assert.deepEqual(answer.media.map((m) => m.type), ['audio', 'video', 'application']);
    assert.deepEqual(answer.media.slice(0, 2).map((m) => m.direction), ['sendrecv', 'recvonly']);
    const announcedSsrc = answer.media[0]!.ssrcs?.[0]?.id;
    assert.ok(announcedSsrc, 'the audio m-line announces our SSRC');
    const candidates = answer.media.flatMap((m) => m.candidates ?? []);
    assert.ok(candidates.length > 0 && candidates.every((c) => c.ip === '127.0.0.1'), 'only the ICE_BIND_ADDRESS candidate is offered');

    await client.waitConnected();
    const created = await client.nextEvent('session.created');
    assert.equal(created.session.id, client.conversationId);
    await client.nextEvent('conversation.created');

    const ear = listen(client);
    const framesBefore = await metric(server.baseUrl, 'parley_video_frames_received_total');
    const stopCamera = await attachCamera(client);
    const stopTone = await attachTone(client);
    await until('echoed audio', () => ear.peakRms(), (rms) => rms > 1000);
    const inbound = await until('inbound-rtp packets', () => inboundAudio(client), (s) => s.packetsReceived > 50);
    assert.equal(Number((inbound as { ssrc?: number }).ssrc), Number(announcedSsrc), 'echo arrives on the SSRC the answer announced');
    // Frames the server assembled from the camera's packets, not the client's own count of what it sent.
    await until('video frames received by the server', () => metric(server.baseUrl, 'parley_video_frames_received_total'), (n) => n > framesBefore);
    stopTone();
    stopCamera();
    ear.stop();

    client.send({ type: 'session.update', session: { voice: 'Juan' } });
    assert.equal((await client.nextEvent('session.updated')).session.voice, 'Juan');
  } finally {
    client.close();
  }
  const rec = await until(
    'the hang-up to be recorded',
    async () => (await http(server.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey })).body,
    (r) => r.state !== 'active',
  );
  assert.equal(rec.state, 'ended');
  assert.equal(rec.end_reason, 'hangup');
});

test('an unknown WEBRTC_STACK stops the server at start with a clear message', async () => {
  await assert.rejects(startServer({ WEBRTC_STACK: 'pjsip' }), /WEBRTC_STACK: must be one of libdatachannel, werift/);
});
