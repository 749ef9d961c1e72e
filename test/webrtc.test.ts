// A real WebRTC handshake with the server: libwebrtc client, client-secrets → ice-config → calls.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sdpTransform from 'sdp-transform';
import { openCall } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';

let server: RunningServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.stop();
});

async function chain() {
  const token = await mintToken(server.baseUrl, server.devKey);
  const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token });
  assert.equal(ice.status, 200);
  return token;
}

test('audio sendrecv + video sendonly + data channel, as the existing clients offer: connects', async () => {
  const token = await chain();
  const client = await openCall(server.baseUrl, token, { video: true, params: { voice: 'Victoria', model: 'orga-1-beta', temperature: 0.5, return_transcription: false, instructions: null, modalities: ['audio', 'video'], history: true } });
  try {
    assert.match(client.conversationId, /^conv_[A-Za-z0-9_-]{22}$/);
    const answer = sdpTransform.parse(client.answerSdp);
    const offer = sdpTransform.parse(client.offerSdp);
    assert.equal(answer.media.length, offer.media.length, 'one answer m-line per offer m-line');
    assert.deepEqual(answer.media.map((m) => m.type), ['audio', 'video', 'application']);
    assert.deepEqual(answer.media.map((m) => String(m.mid)), offer.media.map((m) => String(m.mid)));
    const audio = answer.media[0]!;
    assert.equal(audio.direction, 'sendrecv');
    assert.ok(audio.rtp.some((r) => r.codec.toLowerCase() === 'opus'));
    assert.equal(answer.media[1]!.direction, 'recvonly', 'server receives the camera, sends no video');
    assert.ok(answer.fingerprint ?? audio.fingerprint, 'a=fingerprint');
    assert.ok(audio.iceUfrag ?? answer.iceUfrag, 'a=ice-ufrag');
    assert.ok(audio.icePwd ?? answer.icePwd, 'a=ice-pwd');
    assert.ok(audio.setup, 'a=setup');
    assert.ok(answer.media.some((m) => (m.candidates ?? []).length > 0), 'server candidates are in the answer');
    await client.waitConnected();
    await client.waitChannelOpen();
  } finally {
    client.close();
  }
});

test('audio-only offer connects and opens the data channel', async () => {
  const token = await chain();
  const client = await openCall(server.baseUrl, token, { params: {} });
  try {
    const answer = sdpTransform.parse(client.answerSdp);
    assert.deepEqual(answer.media.map((m) => m.type), ['audio', 'application']);
    await client.waitConnected();
    await client.waitChannelOpen();
  } finally {
    client.close();
  }
});

test('video offered but not in modalities: the video m-line is answered inactive', async () => {
  const token = await chain();
  const client = await openCall(server.baseUrl, token, { video: true, params: { modalities: ['audio'] } });
  try {
    const answer = sdpTransform.parse(client.answerSdp);
    assert.equal(answer.media[1]!.type, 'video');
    assert.ok(answer.media[1]!.direction === 'inactive' || answer.media[1]!.port === 0);
    await client.waitConnected();
  } finally {
    client.close();
  }
});
