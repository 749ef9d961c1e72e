// No offer crashes the server or yields a 5xx: a real libwebrtc offer, mutated at random, is posted
// many times; every answer is 200 (a usable offer) or 422 (naming what is wrong).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import wrtc from '@roamhq/wrtc';
import { mutateSdp, rng } from './helpers/sdpFuzz.ts';
import { http, mintToken, startServer, type RunningServer, NO_RATE_LIMITS, NO_CALL_LIMITS } from './helpers/server.ts';
import './helpers/rtcClient.ts';

let server: RunningServer;
let baseOffer: string;

before(async () => {
  server = await startServer({ CALL_CONNECT_TIMEOUT_MS: '1000', MAX_CONCURRENT_CALLS: '1000', ...NO_RATE_LIMITS, ...NO_CALL_LIMITS });
  const pc = new (wrtc as any).RTCPeerConnection({ iceServers: [] });
  pc.addTransceiver('audio', { direction: 'sendrecv' });
  pc.addTransceiver('video', { direction: 'sendonly' });
  pc.createDataChannel('orga-realtime-client-events');
  const offer = await pc.createOffer();
  baseOffer = offer.sdp;
  pc.close();
});
after(async () => {
  await server.stop();
});

test('300 mutated offers: only 200 or 422, and the server stays up', async () => {
  const token = await mintToken(server.baseUrl, server.devKey);
  const random = rng(42);
  const lines = baseOffer.split('\r\n');
  const statuses = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const sdp = mutateSdp(lines, random);
    const candidates = random() < 0.3 ? [{ candidate: 'candidate:1 1 udp 1 127.0.0.1 9 typ host', sdpMid: String(Math.floor(random() * 5)) }, { candidate: 'garbage', sdpMLineIndex: 7 }] : [];
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp, type: 'offer', candidates }, params: {} } });
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    assert.ok(r.status === 200 || r.status === 422, `mutation ${i} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    if (r.status === 422) assert.ok(r.body.detail.length > 0 && r.body.detail.every((d: any) => typeof d.msg === 'string'));
  }
  assert.ok((statuses.get(200) ?? 0) > 0 && (statuses.get(422) ?? 0) > 0, `both outcomes occur: ${JSON.stringify([...statuses])}`);
  assert.equal((await http(server.baseUrl, '/healthz')).status, 200);
  assert.equal(server.proc.exitCode, null, 'the server process is alive');
});
