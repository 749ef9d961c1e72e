// Complete calls through a Node libwebrtc client: media both ways, the session protocol, lifecycle.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { attachCamera, attachTone, inboundAudio, listen, openCall, outboundAudioPackets } from './helpers/rtcClient.ts';
import { http, metric, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';


async function record(server: RunningServer, id: string) {
  return (await http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: server.devKey })).body;
}

describe('echo calls', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.stop();
  });

  test('audio-only: events, echoed audio, session.update, errors, hang-up', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { params: { model: 'audio-echo', voice: 'Ethan', temperature: 0.7 } });
    try {
      await client.waitConnected();
      const created = await client.nextEvent('session.created');
      assert.equal(created.session.id, client.conversationId);
      assert.equal(created.session.object, 'realtime.session');
      assert.equal(created.session.model, 'audio-echo');
      assert.equal(created.session.voice, 'Ethan');
      assert.equal(created.session.temperature, 0.7);
      assert.equal(created.session.return_transcription, false);
      assert.equal(created.session.instructions, null);
      assert.deepEqual(created.session.modalities, ['audio', 'video']);
      const conv = await client.nextEvent('conversation.created');
      assert.equal(conv.conversation.id, client.conversationId);

      const ear = listen(client);
      const stopTone = await attachTone(client);
      await until('echoed audio', () => ear.peakRms(), (rms) => rms > 1000);
      const stats = await until('inbound-rtp packets', () => inboundAudio(client), (s) => s.packetsReceived > 50);
      assert.ok(stats.packetsReceived > 50);
      stopTone();
      ear.stop();

      client.send({ event: 'session.update', data: { voice: 'Juan', instructions: 'Be brief.', modalities: ['audio'] } });
      const updated = await client.nextEvent('session.updated');
      assert.equal(updated.session.voice, 'Juan');
      assert.equal(updated.session.instructions, 'Be brief.');
      assert.deepEqual(updated.session.modalities, ['audio']);

      client.send({ type: 'session.update', session: { voice: 'Nobody', temperature: 'hot' } });
      const invalid = await client.nextEvent('error');
      assert.equal(invalid.error.code, 'invalid_session_update');
      assert.match(invalid.error.message, /voice/);
      assert.deepEqual(invalid.error.detail.map((d: any) => d.type).sort(), ['float_parsing', 'literal_error']);

      client.send('this is not json');
      client.send({ type: 'no.such.event' });
      client.send([1, 2]);
      await until('three more errors', () => client.events.filter((e) => e.type === 'error').length, (n) => n >= 4);
      const codes = client.events.filter((e) => e.type === 'error').map((e) => e.error.code);
      assert.deepEqual(codes, ['invalid_session_update', 'invalid_json', 'unknown_event', 'invalid_event']);
      assert.equal(client.pc.connectionState, 'connected', 'bad messages did not end the call');

      const rec = await record(server, client.conversationId);
      assert.equal(rec.state, 'active');
      assert.equal(rec.params.voice, 'Juan', 'the record carries the live params');
    } finally {
      client.close();
    }
    const rec = await until('the hang-up to be recorded', () => record(server, client.conversationId), (r) => r.state !== 'active');
    assert.equal(rec.state, 'ended');
    assert.equal(rec.end_reason, 'hangup');
    assert.ok(rec.connected_at && rec.ended_at);
  });

  test('a caller sending 10 ms Opus packets is heard: its audio comes back', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' }, ptime: 10 });
    try {
      await client.waitConnected();
      const ear = listen(client);
      const stopTone = await attachTone(client);
      await until('echoed audio', () => ear.peakRms(), (rms) => rms > 1000);
      // The caller really sends 10 ms packets: twice as many as the 20 ms packets coming back.
      const before = { sent: await outboundAudioPackets(client), received: (await inboundAudio(client)).packetsReceived };
      const after = await until(
        '50 more echo packets',
        async () => ({ sent: await outboundAudioPackets(client), received: (await inboundAudio(client)).packetsReceived }),
        (s) => s.received - before.received >= 50,
      );
      const ratio = (after.sent - before.sent) / (after.received - before.received);
      assert.ok(ratio > 1.6 && ratio < 2.4, `packets sent per packet echoed: ${ratio.toFixed(2)} (10 ms out, 20 ms back)`);
      stopTone();
      ear.stop();
    } finally {
      client.close();
    }
  });

  test('audio + video sendonly with tracks attached after connect (replaceTrack)', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { video: true, params: { model: 'audio-echo', modalities: ['audio', 'video'] } });
    try {
      await client.waitConnected();
      await client.nextEvent('session.created');
      const ear = listen(client);
      const framesBefore = await metric(server.baseUrl, 'parley_video_frames_received_total');
      const stopCamera = await attachCamera(client);
      const stopTone = await attachTone(client);
      await until('echoed audio', () => ear.peakRms(), (rms) => rms > 1000);
      // Frames the server assembled from the camera's packets, not the client's own count of what it sent.
      await until('video frames received by the server', () => metric(server.baseUrl, 'parley_video_frames_received_total'), (n) => n > framesBefore);
      stopTone();
      stopCamera();
      ear.stop();
    } finally {
      client.close();
    }
  });

  test('session.end from the client ends the call with reason session_end', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    try {
      await client.waitConnected();
      await client.nextEvent('session.created');
      client.send({ type: 'session.end' });
      const ended = await client.nextEvent('session.ended');
      assert.equal(ended.reason, 'session_end');
    } finally {
      client.close();
    }
    const rec = await until('the end to be recorded', () => record(server, client.conversationId), (r) => r.state === 'ended');
    assert.equal(rec.end_reason, 'session_end');
    const metrics = await (await fetch(server.baseUrl + '/metrics')).text();
    assert.match(metrics, /parley_calls_ended_total\{state="ended",reason="session_end",transport="webrtc"\} 1/);
    assert.match(metrics, /parley_offer_to_answer_seconds_count \d+/);
  });

  test("another key cannot read a conversation", async () => {
    const created = await server.cli('keys', 'create', '--name', 'other');
    const otherKey = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    client.close();
    const r = await http(server.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: otherKey });
    assert.equal(r.status, 404);
    assert.equal(r.body.error.type, 'invalid_request_error');
  });
});

describe('lifecycle limits', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ CALL_CONNECT_TIMEOUT_MS: '1500', CALL_IDLE_TIMEOUT_MS: '2000', MAX_CONCURRENT_CALLS: '1' });
  });
  after(async () => {
    await server.stop();
  });

  test('a client that never connects: failed, connect_timeout; the slot is freed', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { withholdCandidates: true, params: {} });
    client.close();
    const rec = await until('connect timeout', () => record(server, client.conversationId), (r) => r.state !== 'connecting', 8000);
    assert.equal(rec.state, 'failed');
    assert.equal(rec.end_reason, 'connect_timeout');
    assert.equal(rec.connected_at, null);
  });

  test('over the concurrent-call limit: 503 Shape A with Retry-After', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const first = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    try {
      await first.waitConnected();
      await assert.rejects(openCall(server.baseUrl, token, { params: {} }), (err: any) => {
        assert.equal(err.status, 503);
        // The server cannot take the call: its fault, not the request's.
        assert.equal(err.body.error.type, 'server_error');
        assert.match(err.body.error.message, /limit/);
        return true;
      });
      const raw = await fetch(server.baseUrl + '/v1/realtime/calls', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ offer: { sdp: first.offerSdp, type: 'offer', candidates: [] }, params: {} }),
      });
      assert.equal(raw.status, 503);
      assert.equal(raw.headers.get('retry-after'), '5');
    } finally {
      first.close();
    }
  });

  test('a connected but silent client: ended, idle_timeout, told with session.ended', async () => {
    // The previous test's call is released first.
    await until('the previous calls to be released', async () => (await http(server.baseUrl, '/healthz')).body.calls, (n) => n === 0);
    const token = await mintToken(server.baseUrl, server.devKey);
    const client = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    try {
      await client.waitConnected();
      const ended = await client.nextEvent('session.ended', 8000);
      assert.equal(ended.reason, 'idle_timeout');
    } finally {
      client.close();
    }
    const rec = await until('the end to be recorded', () => record(server, client.conversationId), (r) => r.state !== 'active');
    assert.equal(rec.state, 'ended');
    assert.equal(rec.end_reason, 'idle_timeout');
  });
});

test('SIGTERM drains: live calls get session.ended and are recorded, then the process exits', async () => {
  const server = await startServer();
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
  await client.waitConnected();
  await client.nextEvent('session.created');
  const code = await server.stop('SIGTERM', { keepData: true });
  assert.equal(code, 0);
  const ended = await client.nextEvent('session.ended', 3000);
  assert.equal(ended.reason, 'server_shutdown');
  client.close();
  const again = await startServer({ DATA_DIR: server.env.DATA_DIR!, CREATE_DEV_KEY: 'false' });
  try {
    const rec = (await http(again.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey })).body;
    assert.equal(rec.state, 'ended');
    assert.equal(rec.end_reason, 'server_shutdown');
  } finally {
    await again.stop();
  }
});
