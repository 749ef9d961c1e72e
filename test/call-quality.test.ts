// Each call's quality and usage, through real calls: a spoken WebRTC call through a relay on
// loopback (its record's loss, jitter, round trip, time to connected, bitrates and usage against
// what the client itself counted), the same with one in ten of the caller's packets dropped on the
// way, a WebSocket call (no RTP: bitrates and usage only), and the histograms on GET /metrics.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';
import { inboundAudio, openCall, outboundAudio, outboundAudioPackets, type RtcClient } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { attachMicrophone, speak } from './helpers/speech.ts';
import { startRelay, type UdpRelay } from './helpers/udpRelay.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.stop();
});

/** A WebRTC call whose media goes through `relay` (the server is given none of the client's own candidates). */
async function callThrough(relay: UdpRelay, params: Record<string, unknown>): Promise<RtcClient> {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params, hideCandidates: true, rewriteAnswer: (sdp) => relay.pointAnswerHere(sdp) });
  await client.waitConnected();
  await client.nextEvent('session.created');
  return client;
}

/** The conversation's record once its end (and with it its figures) is recorded. */
async function endedRecord(id: string): Promise<any> {
  const res = await until(
    `the record of ${id} to end`,
    () => http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: server.devKey }),
    (r) => r.status === 200 && r.body.state !== 'connecting' && r.body.state !== 'active',
  );
  return res.body;
}

/** One series' value on GET /metrics, its labels in any order (0 when absent). */
async function series(name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  for (const line of text.split('\n')) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.keys(got).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return 0;
}

/** How many calls each quality histogram has observed, by transport. */
async function observed(transport: string): Promise<Record<string, number>> {
  const names = ['time_to_connected_seconds', 'packet_loss_ratio', 'jitter_seconds', 'rtt_seconds'];
  const counts = await Promise.all(names.map((n) => series(`parley_call_${n}_count`, { transport })));
  return Object.fromEntries(names.map((n, i) => [n, counts[i]!]));
}

/** WebRTC calls that lost more than 5 % and at most 20 % of the caller's packets, from the loss histogram. */
async function lossyCalls(): Promise<number> {
  const upTo = (le: string) => series('parley_call_packet_loss_ratio_bucket', { transport: 'webrtc', le });
  return (await upTo('0.2')) - (await upTo('0.05'));
}

const near = (actual: number, expected: number, tolerance: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected ${expected} ± ${tolerance}`);

test('a spoken WebRTC call: its record carries plausible quality and the usage the client saw', async () => {
  const relay = await startRelay();
  const before = await observed('webrtc');
  const client = await callThrough(relay, { model: 'echo', voice: 'Victoria', return_transcription: true });
  try {
    const mic = await attachMicrophone(client);
    await until('the microphone to send', () => outboundAudioPackets(client), (n) => n >= 25);
    await mic.say(speak('what time is it'));
    const reply = await client.nextEvent('response.output_item.done', 20_000);
    assert.match(reply.text, /time/);
    // The reply has been played out (the server's queue ran dry).
    await client.nextEvent('response.audio.done', 20_000);

    // A round trip needs a report from the client that echoes one of the server's sender reports:
    // one made after the first SR reached it (libwebrtc reports every few seconds).
    await until('a sender report from the server', () => relay.senderReportsFromServer(), (n) => n >= 1);
    const reportsBefore = relay.reportsFromClient();
    await until('a report from the client after it', () => relay.reportsFromClient(), (n) => n > reportsBefore, 15_000);
    // An exchange on the data channel, which follows that report on the same path to the server.
    const from = client.events.length;
    client.send({ type: 'session.update', session: { instructions: 'Be brief.' } });
    await client.nextEvent('session.updated', 10_000, from);

    const { packetsSent: sent, bytesSent } = await outboundAudio(client);
    const heard = await inboundAudio(client);
    client.close();
    mic.stop();
    const record = await endedRecord(client.conversationId);
    assert.equal(record.state, 'ended');
    const { quality, usage } = record;

    assert.equal(quality.transport, 'webrtc');
    assert.ok(quality.time_to_connected_ms > 0 && quality.time_to_connected_ms < 10_000, `time to connected ${quality.time_to_connected_ms} ms`);
    near(quality.inbound.packets, sent, 25, "packets received against the client's count sent");
    assert.ok(quality.inbound.packets_lost <= 2, `nothing lost on loopback (${quality.inbound.packets_lost})`);
    assert.ok(quality.inbound.loss_pct < 1, `loss ${quality.inbound.loss_pct} %`);
    assert.ok(quality.inbound.jitter_p95_ms >= 0 && quality.inbound.jitter_p95_ms < 50, `jitter p95 ${quality.inbound.jitter_p95_ms} ms`);
    // Payload bits over the seconds of audio they carried (the client's Opus is 20 ms a packet): its
    // silences are a few bytes a packet, so the average is low but above Opus's floor.
    near(quality.inbound.bitrate_kbps, (bytesSent * 8) / (sent * 0.02) / 1000, 1, "the caller's bitrate against the client's bytes sent");
    assert.ok(quality.inbound.bitrate_kbps > 0.5 && quality.inbound.bitrate_kbps <= 510, `caller's Opus at ${quality.inbound.bitrate_kbps} kbps`);
    near(quality.outbound.packets, heard.packetsReceived, 2, "packets sent against the client's count received");
    near(quality.outbound.bitrate_kbps, (heard.bytesReceived * 8) / (heard.packetsReceived * 0.02) / 1000, 1, "the agent's bitrate against the client's bytes received");
    assert.ok(quality.outbound.bitrate_kbps >= 6 && quality.outbound.bitrate_kbps <= 510, `agent's Opus at ${quality.outbound.bitrate_kbps} kbps`);
    assert.ok(quality.rtt_ms.samples >= 1, `round trips measured: ${quality.rtt_ms.samples}`);
    for (const key of ['p50', 'p95', 'last'] as const) {
      assert.ok(quality.rtt_ms[key] >= 0 && quality.rtt_ms[key] < 200, `rtt ${key} ${quality.rtt_ms[key]} ms`);
    }

    near(usage.caller_audio_s, sent * 0.02, 0.5, "seconds of the caller's audio against what the client sent");
    // The server sends one packet per 20 ms of the agent's speech.
    near(usage.agent_audio_s, heard.packetsReceived * 0.02, 0.1, "seconds of the agent's audio against what the client received");
    assert.ok(usage.input_tokens > 0 && usage.output_tokens > 0, `tokens of the reply: ${usage.input_tokens} in, ${usage.output_tokens} out`);

    // Observed once each on GET /metrics, under its transport.
    const after = await observed('webrtc');
    for (const [name, count] of Object.entries(after)) assert.equal(count, before[name]! + 1, `parley_call_${name} observed the call`);
    assert.ok((await series('parley_call_packet_loss_ratio_bucket', { transport: 'webrtc', le: '0.01' })) >= 1, 'its loss in the lowest buckets');
    assert.ok((await series('parley_call_rtt_seconds_bucket', { transport: 'webrtc', le: '0.2' })) >= 1, 'its round trip under 200 ms');
  } finally {
    client.close();
    relay.close();
  }
});

test("one in ten of the caller's packets dropped on the way: the record shows 10 % lost", async () => {
  const relay = await startRelay({ dropEvery: 10 });
  const lossyBefore = await lossyCalls();
  const client = await callThrough(relay, { model: 'audio-echo' });
  try {
    const mic = await attachMicrophone(client);
    await until('three seconds of the caller', () => relay.rtpFromClient(), (n) => n >= 150);
    client.close();
    mic.stop();
    const record = await endedRecord(client.conversationId);
    const { inbound } = record.quality;
    // What the relay dropped, but for a packet or two at the very end (dropped after the last that arrived).
    near(inbound.packets_lost, relay.droppedFromClient(), 2, 'packets lost against those the relay dropped');
    near(inbound.loss_pct, 10, 1.5, 'loss %');
    assert.ok(inbound.packets > 100, `packets received: ${inbound.packets}`);
    assert.equal(await lossyCalls(), lossyBefore + 1, 'on GET /metrics, one more call that lost 5–20 %');
  } finally {
    client.close();
    relay.close();
  }
});

test('a WebSocket call: no RTP, so bitrates and usage only; tokens as its response.done events told', async () => {
  const before = await observed('websocket');
  const callerSecondsBefore = await series('parley_call_audio_seconds_total', { direction: 'caller', transport: 'websocket' });
  const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` } });
  const events: any[] = [];
  ws.on('message', (data) => events.push(JSON.parse(data.toString())));
  const next = (type: string, from = 0) => until(type, () => events.slice(from).find((e) => e.type === type), (e) => e !== undefined, 20_000);
  try {
    const created = await next('session.created');
    ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } }));
    await next('session.updated');
    // One second of the caller (PCM16 at 24 kHz), in 100 ms pieces.
    for (let i = 0; i < 10; i++) ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(4800).toString('base64') }));
    ws.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me about the sea.' }] } }));
    ws.send(JSON.stringify({ type: 'response.create' }));
    const done = await next('response.done');
    const agentBytes = events.filter((e) => e.type === 'response.output_audio.delta').reduce((n, e) => n + Buffer.from(e.delta, 'base64').length, 0);
    ws.close();
    const record = await endedRecord(created.session.id);
    const { quality, usage } = record;

    assert.equal(quality.transport, 'websocket');
    assert.ok(quality.time_to_connected_ms >= 0 && quality.time_to_connected_ms < 5000, `time to connected ${quality.time_to_connected_ms} ms`);
    assert.deepEqual(
      { ...quality.inbound, bitrate_kbps: undefined },
      { packets: null, packets_lost: null, loss_pct: null, jitter_p95_ms: null, bitrate_kbps: undefined },
      'no packets, loss nor jitter on a WebSocket',
    );
    assert.deepEqual(quality.rtt_ms, { p50: null, p95: null, last: null, samples: 0 });
    // PCM16 at 24 kHz is 384 kbit/s whatever it says.
    assert.equal(quality.inbound.bitrate_kbps, 384);
    assert.equal(quality.outbound.bitrate_kbps, 384);
    assert.equal(quality.outbound.packets, null);

    near(usage.caller_audio_s, 1, 0.02, "seconds of the caller's audio");
    assert.ok(agentBytes > 0, 'the reply was spoken');
    near(usage.agent_audio_s, agentBytes / 48_000, 0.02, "seconds of the agent's audio against the deltas' bytes");
    assert.equal(usage.input_tokens, done.response.usage.input_tokens);
    assert.equal(usage.output_tokens, done.response.usage.output_tokens);

    // On GET /metrics: its time to connected under its transport, no loss, jitter nor round trip; its audio counted.
    const after = await observed('websocket');
    assert.deepEqual(after, { ...before, time_to_connected_seconds: before.time_to_connected_seconds! + 1 });
    near(await series('parley_call_audio_seconds_total', { direction: 'caller', transport: 'websocket' }), callerSecondsBefore + 1, 0.02, 'caller seconds counted');
  } finally {
    ws.terminate();
  }
});
