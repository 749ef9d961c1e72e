// The ICE candidate filter on what reaches the WebRTC stack: the server (bound to 127.0.0.1) logs,
// at debug level, the remote candidates it hands its stack for each call; every address offered
// here is one the filter refuses, or loopback. No test here offers an address the filter would let
// through to anything but loopback, so no packet leaves this machine.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import wrtc from '@roamhq/wrtc';
import { waitFor } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const { RTCPeerConnection } = wrtc as any;

const candidate = (address: string, port = 50000) => `candidate:1 1 udp 2122260223 ${address} ${port} typ host`;

/** A client's offer (audio, video, data channel) without any candidate lines. */
async function bareOffer(): Promise<{ pc: any; sdp: string }> {
  const pc = new RTCPeerConnection({ iceServers: [] });
  pc.addTransceiver('audio', { direction: 'sendrecv' });
  pc.createDataChannel('orga-realtime-client-events');
  const offer = await pc.createOffer();
  return { pc, sdp: offer.sdp.replace(/^a=candidate:.*\r\n/gm, '') };
}

/** The SDP with `lines` added right after its first a=mid line. */
const withCandidateLines = (sdp: string, lines: string[]) => sdp.replace(/^(a=mid:.*\r\n)/m, (mid) => mid + lines.map((l) => `a=${l}\r\n`).join(''));

/** The debug line the server logs just before handing the offer to its WebRTC stack. */
async function givenToStack(server: RunningServer, conversationId: string): Promise<{ given: string[]; dropped: { address?: string; reason: string }[] }> {
  const line = await until(
    'the candidates log line',
    () => server.stderr().split('\n').find((l) => l.includes(conversationId) && l.includes('remote candidates given to the WebRTC stack')),
    (l) => l !== undefined,
  );
  return JSON.parse(line!);
}

describe('ICE candidate filter', () => {
  let server: RunningServer;
  let token: string;
  before(async () => {
    server = await startServer({ LOG_LEVEL: 'debug', ICE_CANDIDATE_DENY: '127.0.0.2/32' });
    token = await mintToken(server.baseUrl, server.devKey);
  });
  after(async () => {
    await server?.stop();
  });

  test('candidates in the SDP and in offer.candidates are filtered alike before the stack sees them', async () => {
    const { pc, sdp } = await bareOffer();
    try {
      const inSdp = ['224.0.0.1', '239.255.255.250', '0.0.0.0', '169.254.169.254', '10.1.2.3', '192.168.1.1', '172.16.5.4', '100.64.1.1', '255.255.255.255', '192.0.2.55', 'fe80::1', 'ff02::1', '::', 'fd00:ec2::254', '127.0.0.2', '127.0.0.1'];
      const inBody = ['abcd-1234.local', 'metadata.google.internal', '198.51.100.9', '::ffff:169.254.169.254', '127.0.0.1'];
      const r = await http(server.baseUrl, '/v1/realtime/calls', {
        token,
        body: {
          offer: { sdp: withCandidateLines(sdp, inSdp.map((a) => candidate(a))), type: 'offer', candidates: inBody.map((a) => ({ candidate: candidate(a, 40000), sdpMid: '0' })) },
          params: { model: 'audio-echo' },
        },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const seen = await givenToStack(server, r.body.conversation_id);
      assert.deepEqual(seen.given, ['127.0.0.1', '127.0.0.1'], 'only loopback reaches the stack');
      assert.deepEqual(
        seen.dropped.map((d) => `${d.address ?? '-'} ${d.reason}`),
        [
          '224.0.0.1 multicast',
          '239.255.255.250 multicast',
          '0.0.0.0 unspecified',
          '169.254.169.254 metadata',
          '10.1.2.3 private',
          '192.168.1.1 private',
          '172.16.5.4 private',
          '100.64.1.1 private',
          '255.255.255.255 broadcast',
          '192.0.2.55 reserved',
          'fe80::1 link_local',
          'ff02::1 multicast',
          ':: unspecified',
          'fd00:ec2::254 metadata',
          '127.0.0.2 denied',
          '- not_an_ip',
          '- not_an_ip',
          '198.51.100.9 reserved',
          '169.254.169.254 metadata',
        ],
      );
      const metrics = await (await fetch(server.baseUrl + '/metrics')).text();
      assert.match(metrics, /parley_ice_candidates_dropped_total\{reason="multicast"\} 3/);
      assert.match(metrics, /parley_ice_candidates_dropped_total\{reason="metadata"\} 3/);
    } finally {
      pc.close();
    }
  });

  test('an SDP with more than 64 candidates is 422, as offer.candidates is', async () => {
    const { pc, sdp } = await bareOffer();
    pc.close();
    const lines = Array.from({ length: 65 }, (_, i) => candidate('127.0.0.1', 40000 + i));
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp: withCandidateLines(sdp, lines), type: 'offer', candidates: [] }, params: {} } });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'offer', 'sdp']);
    assert.match(r.body.detail[0].msg, /65 a=candidate lines; at most 64/);
    const ok = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp: withCandidateLines(sdp, lines.slice(1)), type: 'offer', candidates: [] }, params: {} } });
    assert.equal(ok.status, 200, '64 are accepted');
  });

  test('an offer with no candidates at all still connects (the server learns the client from its checks)', async () => {
    const pc = new RTCPeerConnection({ iceServers: [] });
    pc.addTransceiver('audio', { direction: 'sendrecv' });
    pc.createDataChannel('orga-realtime-client-events');
    try {
      await pc.setLocalDescription(await pc.createOffer());
      const sdp = pc.localDescription.sdp.replace(/^a=candidate:.*\r\n/gm, '');
      const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp, type: 'offer', candidates: [] }, params: { model: 'audio-echo' } } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual((await givenToStack(server, r.body.conversation_id)).given, []);
      await pc.setRemoteDescription(r.body.answer);
      await waitFor(() => pc.connectionState === 'connected', (cb) => (pc.onconnectionstatechange = cb), 10_000, 'connected');
    } finally {
      pc.close();
    }
  });
});
