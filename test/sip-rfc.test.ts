// SIP as RFC 3261 and its test messages (RFC 4475) say, through raw SIP on loopback: a 200 OK that is
// never ACKed is resent for 64·T1 and only then is the dialog ended with a BYE (§13.3.1.4).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freePort } from './helpers/baresip.ts';
import { G711_OFFER, sipRequest, udpPeer, type UdpPeer } from './helpers/rawSip.ts';
import { startServer, type RunningServer } from './helpers/server.ts';

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
