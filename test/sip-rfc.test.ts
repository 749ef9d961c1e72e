// SIP as RFC 3261 and its test messages (RFC 4475) say, through raw SIP on loopback: a 200 OK that is
// never ACKed is resent for 64·T1 and only then is the dialog ended with a BYE (§13.3.1.4); an
// outbound call's dialog keeps the SDP session id of our offer in the answers to a re-INVITE (RFC
// 3264 §8); and a callee's answer that crossed our CANCEL leaves nothing behind once it is over.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePort } from './helpers/baresip.ts';
import { G711_OFFER, sipRequest, udpPeer, type UdpPeer } from './helpers/rawSip.ts';
import { metric, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/** The first line of a message (a request's method and URI, a response's status). */
const startLine = (text: string) => text.slice(0, text.indexOf('\r\n'));

/** The response of `status` to `request` (its Via, From, To, Call-ID and CSeq). */
function answerTo(request: string, status: number, reason = 'OK'): string {
  const headers = request
    .slice(0, request.indexOf('\r\n\r\n'))
    .split('\r\n')
    .slice(1)
    .filter((line) => /^(Via|From|To|Call-ID|CSeq):/i.test(line));
  return [`SIP/2.0 ${status} ${reason}`, ...headers, 'Content-Length: 0', '', ''].join('\r\n');
}

async function conversation(server: RunningServer, id: string): Promise<any> {
  const res = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
  return res.json();
}

describe('a 200 OK never ACKed', () => {
  let server: RunningServer;
  let sipPort: number;
  before(async () => {
    sipPort = await freePort();
    // Loopback callers are admitted without SIP_USERS.
    server = await startServer({ SIP_PORT: String(sipPort) });
  });
  after(() => server?.stop());

  test('is resent (T1 doubling to T2) until 64·T1, then the dialog ends with a BYE; nothing else comes first', async () => {
    const peer: UdpPeer = await udpPeer(sipPort, (text, p) => {
      // A caller that answers BYEs but never ACKs the 200.
      if (text.startsWith('BYE ')) p.send(answerTo(text, 200));
    });
    try {
      peer.send(sipRequest(sipPort, 'INVITE', { via: `UDP 127.0.0.1:${peer.port}`, body: G711_OFFER }));
      const ok = await peer.next('the 200 OK', /^SIP\/2\.0 200 /);
      const id = /X-Parley-Call-Id: (\S+)/.exec(ok)![1]!;
      // Not before 64·T1 = 32 s (CALL_CONNECT_TIMEOUT_MS, 10 s, does not cut it short); generous for a busy machine.
      await peer.next('the BYE', /^BYE /, 120_000);
      // RFC 3261 §13.3.1.4 (and §17.2.1's Timer G): resent at T1, 2·T1, 4·T1, then every T2 (4 s):
      // 0.5, 1.5, 3.5, 7.5, 11.5 … 31.5 s after the first, ten times in 64·T1; then the BYE.
      const lines = peer.heard.map(startLine);
      assert.deepEqual(lines, ['SIP/2.0 100 Trying', 'SIP/2.0 180 Ringing', ...Array<string>(11).fill('SIP/2.0 200 OK'), lines.at(-1)]);
      assert.match(lines.at(-1)!, /^BYE sip:alice@127\.0\.0\.1:\d+ SIP\/2\.0$/);
      const record = await conversation(server, id);
      assert.equal(record.state, 'failed');
      assert.equal(record.end_reason, 'not_acknowledged');
    } finally {
      peer.close();
    }
  });
});

/** The SDP origin (o=) of a message's body: its session id and version. */
function origin(message: string): { sessionId: string; version: number } {
  const m = /\r\no=\S+ (\d+) (\d+) IN /.exec(message);
  assert.ok(m, `an o= line in ${startLine(message)}`);
  return { sessionId: m[1]!, version: Number(m[2]) };
}

/** A header's value in a message (the first). */
const header = (message: string, name: string) => new RegExp(`\\r\\n${name}: ([^\\r]*)`, 'i').exec(message)?.[1] ?? '';

describe("an outbound call's dialog", () => {
  let server: RunningServer;
  let sipPort: number;
  const api = (path: string, body?: unknown) =>
    fetch(`${server.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.devKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
  before(async () => {
    sipPort = await freePort();
    // --expose-gc: each /metrics scrape collects first, so parley_call_sessions_alive counts what is kept.
    server = await startServer({ SIP_PORT: String(sipPort), SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*' }, ['--expose-gc']);
  });
  after(() => server?.stop());

  /** The callee's answer to `invite`: its To tag added, and SDP when given. */
  const answer = (invite: string, status: number, reason: string, tag: string, sdp = '') =>
    answerTo(invite, status, reason)
      .replace(/\r\nTo: ([^\r]*)/, (_m, to: string) => `\r\nTo: ${to};tag=${tag}`)
      .replace('Content-Length: 0\r\n\r\n', sdp ? `Contact: <sip:bob@127.0.0.1>\r\nContent-Type: application/sdp\r\nContent-Length: ${sdp.length}\r\n\r\n${sdp}` : 'Content-Length: 0\r\n\r\n');

  test("a re-INVITE from the callee is answered with our offer's session id, its version one up", async () => {
    const peer = await udpPeer(sipPort, (text, p) => {
      if (text.startsWith('BYE ')) p.send(answerTo(text, 200));
    });
    try {
      const placed = await api('/v1/realtime/sip/calls', { to: `sip:bob@127.0.0.1:${peer.port}`, wait_for_callee: true });
      assert.equal(placed.status, 201, await placed.clone().text());
      const { call_id: id } = (await placed.json()) as { call_id: string };
      const invite = await peer.next('our INVITE', /^INVITE /);
      const offered = origin(invite);
      // Answered once the API has said the call is placed: our offer was written earlier.
      peer.send(answer(invite, 200, 'OK', 'callee', G711_OFFER.replace('m=audio 40000', `m=audio ${peer.port + 1}`)));
      await peer.next('our ACK', /^ACK /);
      const ourUri = header(invite, 'Contact').replace(/^<|>$/g, '');
      // The callee puts the call on hold: a re-INVITE inside the dialog, in its own CSeq space.
      const reInvite = [
        `INVITE ${ourUri} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bKreinvite${Date.now()}`,
        'Max-Forwards: 70',
        `From: ${header(invite, 'To')};tag=callee`,
        `To: ${header(invite, 'From')}`,
        `Call-ID: ${header(invite, 'Call-ID')}`,
        'CSeq: 1 INVITE',
        `Contact: <sip:bob@127.0.0.1:${peer.port}>`,
        'Content-Type: application/sdp',
      ];
      const hold = G711_OFFER + 'a=sendonly\r\n';
      peer.send([...reInvite, `Content-Length: ${hold.length}`, '', hold].join('\r\n'));
      const reAnswer = await peer.next('the answer to the re-INVITE', /^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/);
      assert.match(reAnswer, /a=recvonly/);
      assert.deepEqual(origin(reAnswer), { sessionId: offered.sessionId, version: offered.version + 1 });
      assert.equal((await api(`/v1/realtime/calls/${id}/hangup`)).status, 200);
      await peer.next('our BYE', /^BYE /);
    } finally {
      peer.close();
    }
  });

  test('an answer that crossed our CANCEL is ACKed and hung up, and leaves no call session behind', async () => {
    const peer = await udpPeer(sipPort, (text, p) => {
      const invite = p.heard.find((m) => m.startsWith('INVITE '));
      if (text.startsWith('INVITE ')) p.send(answer(text, 180, 'Ringing', 'callee'));
      // Our CANCEL crosses the callee's 200: it answers the INVITE, then the CANCEL (nothing left to cancel).
      if (text.startsWith('CANCEL ') && invite) {
        p.send(answer(invite, 200, 'OK', 'callee', G711_OFFER.replace('m=audio 40000', `m=audio ${p.port + 1}`)));
        p.send(answerTo(text, 200));
      }
      if (text.startsWith('BYE ')) p.send(answerTo(text, 200));
    });
    try {
      const placed = await api('/v1/realtime/sip/calls', { to: `sip:bob@127.0.0.1:${peer.port}` });
      assert.equal(placed.status, 201, await placed.clone().text());
      const { call_id: id } = (await placed.json()) as { call_id: string };
      await peer.next('our INVITE', /^INVITE /);
      // Hung up while it rings: CANCEL; the callee's 200 comes anyway, and is ACKed and ended (BYE).
      assert.equal((await api(`/v1/realtime/calls/${id}/hangup`)).status, 200);
      await peer.next('our CANCEL', /^CANCEL /);
      await peer.next('our ACK of the 200', /^ACK /);
      await peer.next('our BYE', /^BYE /);
      // Its INVITE's branch and its dialog are kept a transaction's time (64·T1) for retransmissions, then let go.
      await until('every call session collected', () => metric(server.baseUrl, 'parley_call_sessions_alive'), (n) => n === 0, 120_000);
    } finally {
      peer.close();
    }
  });
});
