// No offer crashes the server or yields a 5xx: a real libwebrtc offer, mutated at random, is posted
// many times; every answer is 200 (a usable offer) or 422 (naming what is wrong).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import wrtc from '@roamhq/wrtc';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import './helpers/rtcClient.ts';

let server: RunningServer;
let baseOffer: string;

// A small deterministic generator, so a failure can be replayed.
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

before(async () => {
  server = await startServer({ CALL_CONNECT_TIMEOUT_MS: '1000', MAX_CONCURRENT_CALLS: '1000' });
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
  const junk = ['a=mid:', 'm=audio 0 RTP/AVP', 'a=rtpmap:111 opus/48000/2', 'a=fingerprint:sha-256 00', 'a=group:BUNDLE 9 9 9', 'm=text 9 UDP/TLS/RTP/SAVPF 98', 'a=setup:passive', 'a=candidate:x', '\u0000\u00ff', 'a=ssrc:-1 cname:x', 'a=extmap:300 urn:x', 'c=IN IP6 ::1', 'a=sctp-port:0'];
  const statuses = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const mutated = [...lines];
    const edits = 1 + Math.floor(random() * 4);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(random() * mutated.length);
      const kind = Math.floor(random() * 5);
      if (kind === 0) mutated.splice(at, 1);
      else if (kind === 1) mutated.splice(at, 0, mutated[Math.floor(random() * mutated.length)]!);
      else if (kind === 2) mutated[at] = (mutated[at] ?? '').slice(0, Math.floor(random() * 20));
      else if (kind === 3) mutated.splice(at, 0, junk[Math.floor(random() * junk.length)]!);
      else mutated[at] = (mutated[at] ?? '').replace(/\d+/, String(Math.floor(random() * 1e6)));
    }
    const candidates = random() < 0.3 ? [{ candidate: 'candidate:1 1 udp 1 127.0.0.1 9 typ host', sdpMid: String(Math.floor(random() * 5)) }, { candidate: 'garbage', sdpMLineIndex: 7 }] : [];
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp: mutated.join('\r\n'), type: 'offer', candidates }, params: {} } });
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    assert.ok(r.status === 200 || r.status === 422, `mutation ${i} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
    if (r.status === 422) assert.ok(r.body.detail.length > 0 && r.body.detail.every((d: any) => typeof d.msg === 'string'));
  }
  assert.ok((statuses.get(200) ?? 0) > 0 && (statuses.get(422) ?? 0) > 0, `both outcomes occur: ${JSON.stringify([...statuses])}`);
  assert.equal((await http(server.baseUrl, '/healthz')).status, 200);
  assert.equal(server.proc.exitCode, null, 'the server process is alive');
});
