// SIP as RFC 3261 and its test messages (RFC 4475) say, through raw SIP on loopback: each of RFC
// 4475's 49 messages, over UDP and over TCP, gets the answer its section gives; a 200 OK that is
// never ACKed is resent for 64·T1 and only then is the dialog ended with a BYE (§13.3.1.4); an
// outbound call's dialog keeps the SDP session id of our offer in the answers to a re-INVITE (RFC
// 3264 §8); and a callee's answer that crossed our CANCEL leaves nothing behind once it is over.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { frame } from '../src/sip/message.ts';
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


/** The SDP origin (o=) of a message's body: its session id and version. */
function origin(message: string): { sessionId: string; version: number } {
  const m = /\r\no=\S+ (\d+) (\d+) IN /.exec(message);
  assert.ok(m, `an o= line in ${startLine(message)}`);
  return { sessionId: m[1]!, version: Number(m[2]) };
}

/** A header's value in a message (the first). */
const header = (message: string, name: string) => new RegExp(`\\r\\n${name}: ([^\\r]*)`, 'i').exec(message)?.[1] ?? '';


/**
 * What RFC 4475 says each message gets, by its file (Appendix B) and section: the final statuses
 * Parley answers with, in order, or `none` (a response, or nothing to answer); over TCP, where the
 * RFC says so, `closed` (the stream cannot be framed any more) or `waits` (for the rest of a body
 * its Content-Length promises). Where the RFC lets an element be strict or liberal, Parley is strict
 * for malformed request lines and Request-URIs (400) and liberal for a non-GMT Date (ignored).
 */
const TORTURE: Record<string, { section: string; says: string; udp: number[] | 'none'; tcp?: number[] | 'none' | 'closed' | 'waits'; tcpThenClosed?: true }> = {
  wsinv: { section: '3.1.1.1', says: 'valid; an INVITE inside a dialog we do not have', udp: [481] },
  intmeth: { section: '3.1.1.2', says: 'valid; a method nobody knows', udp: [501] },
  esc01: { section: '3.1.1.3', says: 'valid; a call', udp: [200] },
  escnull: { section: '3.1.1.4', says: 'valid; a REGISTER, challenged', udp: [401] },
  esc02: { section: '3.1.1.5', says: 'valid; RE%47IST%45R is an unknown method, not REGISTER', udp: [501] },
  lwsdisp: { section: '3.1.1.6', says: 'valid', udp: [200] },
  longreq: { section: '3.1.1.7', says: 'valid; a call', udp: [200] },
  // Over TCP the octets after the REGISTER are a second request on the stream (an INVITE without
  // Contact), whose body is 5 octets longer than its Content-Length: then the stream cannot be framed
  // and is closed, before the REGISTER's answer when that waits for its rate limit's count.
  dblreq: { section: '3.1.1.8', says: 'the REGISTER is handled, the rest of the datagram ignored', udp: [401], tcp: [401, 400], tcpThenClosed: true },
  semiuri: { section: '3.1.1.9', says: 'valid', udp: [200] },
  transports: { section: '3.1.1.10', says: 'valid', udp: [200] },
  mpart01: { section: '3.1.1.11', says: 'valid; MESSAGE, which we do not take', udp: [405] },
  unreason: { section: '3.1.1.12', says: 'a valid response, to no request of ours', udp: 'none' },
  noreason: { section: '3.1.1.13', says: 'a valid response, to no request of ours', udp: 'none' },
  badinv01: { section: '3.1.2.1', says: '400', udp: [400] },
  clerr: { section: '3.1.2.2', says: '400 over UDP; over TCP, wait for the rest', udp: [400], tcp: 'waits' },
  ncl: { section: '3.1.2.3', says: 'an error over UDP; over TCP the connection closed', udp: [400], tcp: 'closed' },
  scalar02: { section: '3.1.2.4', says: '400 (the CSeq)', udp: [400] },
  scalarlg: { section: '3.1.2.5', says: 'a response, discarded', udp: 'none' },
  quotbal: { section: '3.1.2.6', says: '400', udp: [400] },
  ltgtruri: { section: '3.1.2.7', says: '400', udp: [400] },
  lwsruri: { section: '3.1.2.8', says: '400', udp: [400] },
  lwsstart: { section: '3.1.2.9', says: 'may be refused as malformed', udp: [400] },
  trws: { section: '3.1.2.10', says: 'may be refused as malformed', udp: [400] },
  escruri: { section: '3.1.2.11', says: 'may be refused 400', udp: [400] },
  baddate: { section: '3.1.2.12', says: 'the Date may be ignored when it is not used; a call', udp: [200] },
  regbadct: { section: '3.1.2.13', says: '400', udp: [400] },
  badaspec: { section: '3.1.2.14', says: '400', udp: [400] },
  baddn: { section: '3.1.2.15', says: '400', udp: [400] },
  badvers: { section: '3.1.2.16', says: '505', udp: [505] },
  mismatch01: { section: '3.1.2.17', says: '400', udp: [400] },
  mismatch02: { section: '3.1.2.18', says: '501, or 400', udp: [400] },
  bigcode: { section: '3.1.2.19', says: 'a response, dropped', udp: 'none' },
  badbranch: { section: '3.2.1', says: '400, or handled as an RFC 2543 transaction', udp: [200] },
  insuf: { section: '3.3.1', says: '400', udp: [400] },
  unkscm: { section: '3.3.2', says: '416', udp: [416] },
  novelsc: { section: '3.3.3', says: '416 (or 404)', udp: [416] },
  unksm2: { section: '3.3.4', says: 'a registrar: 400 (the To is no SIP address)', udp: [400] },
  bext01: { section: '3.3.5', says: '420 with Unsupported', udp: [420] },
  invut: { section: '3.3.6', says: 'an endpoint: 415', udp: [415] },
  regaut01: { section: '3.3.7', says: 'a registrar that authenticates: 401 with a scheme it knows', udp: [401] },
  multi01: { section: '3.3.8', says: '400', udp: [400] },
  mcl01: { section: '3.3.9', says: 'an error over UDP; over TCP the connection closed', udp: [400], tcp: 'closed' },
  bcast: { section: '3.3.10', says: 'a response, not ours', udp: 'none' },
  zeromf: { section: '3.3.11', says: 'an endpoint handles it as if Max-Forwards were positive', udp: [200] },
  cparam01: { section: '3.3.12', says: 'valid; a REGISTER, challenged', udp: [401] },
  cparam02: { section: '3.3.13', says: 'valid; a REGISTER, challenged', udp: [401] },
  regescrt: { section: '3.3.14', says: 'valid; a REGISTER, challenged', udp: [401] },
  sdp01: { section: '3.3.15', says: '406', udp: [406] },
  // Over a stream a message must have a Content-Length (RFC 3261 §18.3): the RFC's case is a datagram.
  inv2543: { section: '3.4.1', says: 'accepted from an element keeping RFC 2543 compatibility; a call', udp: [200], tcp: 'closed' },
};

const FIXTURES = join(import.meta.dirname, 'fixtures/rfc4475');

/**
 * A message of RFC 4475, its addresses moved from 192.0.2.x to 127.0.2.x (the same length), and its
 * top Via's branch (an RFC 3261 one) made its own: the RFC's messages share branches, and to one
 * server cparam02 would be a retransmission of cparam01 (the same branch, sent-by and method).
 */
function torture(name: string): Buffer {
  const text = readFileSync(join(FIXTURES, `${name}.dat`)).toString('latin1').replace(/192\.0\.2\./g, '127.0.2.');
  const end = text.indexOf('\r\n\r\n');
  const branch = /branch\s*=\s*([^;,\s]+)/i.exec(text.slice(0, end));
  if (!branch || !/^z9hG4bK./.test(branch[1]!)) return Buffer.from(text, 'latin1');
  const at = branch.index + branch[0].length;
  return Buffer.from(`${text.slice(0, at)}.${name}${text.slice(at)}`, 'latin1');
}

/** The final responses among `messages`, each once (a UDP 200 comes again until its ACK). */
const finals = (messages: string[]) => [...new Set(messages.filter((m) => /^SIP\/2\.0 [2-6]\d\d/.test(m)))];
const statusOf = (response: string) => Number(response.slice(8, 11));

/** ACK and BYE for a 200 to an INVITE, sent from `via` (`UDP 127.0.0.1:port`): the call ends at once. */
function ackAndBye(ok: string, via: string): string[] {
  const target = /\r\nContact: <([^>]+)>/.exec(ok)![1]!;
  const seq = Number(/\r\nCSeq: (\d+)/.exec(ok)![1]);
  return ['ACK', 'BYE'].map((method, i) =>
    [
      `${method} ${target} SIP/2.0`,
      `Via: SIP/2.0/${via};branch=z9hG4bK${randomBytes(6).toString('hex')}`,
      'Max-Forwards: 70',
      `From: ${header(ok, 'From')}`,
      `To: ${header(ok, 'To')}`,
      `Call-ID: ${header(ok, 'Call-ID')}`,
      `CSeq: ${seq + i} ${method}`,
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n'),
  );
}

/** A TCP connection to Parley's SIP port: what it reads, framed, and whether it closed. */
async function tcpPeer(sipPort: number): Promise<{ socket: Socket; heard: string[]; closed: Promise<void>; via: string }> {
  const socket = connect(sipPort, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const heard: string[] = [];
  let buffer = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (let next = frame(buffer); next.kind === 'message'; next = frame(buffer)) {
      heard.push(next.bytes.toString('latin1'));
      buffer = Buffer.from(next.rest);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, heard, closed, via: `TCP 127.0.0.1:${socket.localPort}` };
}


/** An OPTIONS from `via`, whose answer closes a message's exchange: what came before it is all it got. */
const probe = (sipPort: number, via: string) => sipRequest(sipPort, 'OPTIONS', { via }).replace(/Call-ID: \S+/, 'Call-ID: probe-' + randomBytes(4).toString('hex'));

/**
 * Sends message `name` over UDP; ends the calls it makes (ACK, BYE); then a probe: the final
 * answers that came before the probe's are the message's.
 */
async function overUdp(sipPort: number, name: string): Promise<string[]> {
  const expected = TORTURE[name]!.udp;
  const peer = await udpPeer(sipPort);
  const via = `UDP 127.0.0.1:${peer.port}`;
  try {
    peer.send(torture(name));
    const count = expected === 'none' ? 0 : expected.length;
    await until(`${count} answers to ${name}`, () => finals(peer.heard), (f) => f.length >= count, 30_000);
    for (const ok of finals(peer.heard).filter((m) => /^SIP\/2\.0 200 [^]*\r\nCSeq: \d+ INVITE\r\n/.test(m))) {
      for (const request of ackAndBye(ok, via)) peer.send(request);
      await peer.next('the BYE answered', /^SIP\/2\.0 200 [^]*\r\nCSeq: \d+ BYE\r\n/);
    }
    const question = probe(sipPort, via);
    const callId = header(question, 'Call-ID');
    peer.send(question);
    const answered = await peer.next('the probe answered', new RegExp(`\\r\\nCall-ID: ${callId}\\r\\n`));
    return finals(peer.heard.slice(0, peer.heard.indexOf(answered))).filter((m) => !/\r\nCSeq: \d+ BYE\r\n/.test(m));
  } finally {
    peer.close();
  }
}

/** The same over a TCP connection of its own; `closed` and `waits` are asserted here. */
async function overTcp(sipPort: number, name: string, wanted: number[] | 'none' | 'closed' | 'waits'): Promise<string[]> {
  const peer = await tcpPeer(sipPort);
  try {
    const message = torture(name);
    peer.socket.write(message);
    if (wanted === 'closed') {
      await peer.closed;
      assert.deepEqual(peer.heard, [], 'closed without an answer');
      return [];
    }
    if (wanted === 'waits') {
      // Answered once the body its Content-Length promised has all come (blank lines, which SDP ignores).
      const end = message.indexOf('\r\n\r\n') + 4;
      const missing = Number(/\r\nContent-Length: (\d+)/.exec(message.toString('latin1'))![1]) - (message.length - end);
      assert.deepEqual(peer.heard, [], 'nothing while the body is incomplete');
      peer.socket.write('\r\n'.repeat(Math.floor(missing / 2)) + ' '.repeat(missing % 2));
      await until('the INVITE answered', () => finals(peer.heard), (f) => f.length >= 1, 30_000);
      assert.match(peer.heard[0]!, /^SIP\/2\.0 100 Trying\r\n/);
    }
    if (TORTURE[name]!.tcpThenClosed) {
      await peer.closed;
      return finals(peer.heard);
    }
    const count = wanted === 'none' ? 0 : wanted === 'waits' ? 1 : wanted.length;
    await until(`${count} answers to ${name}`, () => finals(peer.heard), (f) => f.length >= count, 30_000);
    for (const ok of finals(peer.heard).filter((m) => /^SIP\/2\.0 200 [^]*\r\nCSeq: \d+ INVITE\r\n/.test(m))) {
      for (const request of ackAndBye(ok, peer.via)) peer.socket.write(request);
      await until('the BYE answered', () => peer.heard.some((m) => /^SIP\/2\.0 200 [^]*\r\nCSeq: \d+ BYE\r\n/.test(m)), Boolean, 30_000);
    }
    const question = probe(sipPort, peer.via);
    const callId = header(question, 'Call-ID');
    peer.socket.write(question);
    const answered = await until('the probe answered', () => peer.heard.find((m) => m.includes(`\r\nCall-ID: ${callId}\r\n`)), Boolean, 30_000);
    return finals(peer.heard.slice(0, peer.heard.indexOf(answered!))).filter((m) => !/\r\nCSeq: \d+ BYE\r\n/.test(m));
  } finally {
    peer.socket.destroy();
  }
}

// A server for each transport: over UDP, the torture messages and then a 200 OK never ACKed; over
// TCP, the torture messages and then outbound calls' dialogs (both wait 64·T1). One after the other:
// two servers starting at once on a busy machine take longer than the helper waits.
describe('SIP as RFC 3261 and RFC 4475 say', () => {
  for (const transport of ['udp', 'tcp'] as const) {
    describe(`over ${transport.toUpperCase()}`, () => {
      let server: RunningServer;
      let sipPort: number;
      before(async () => {
        sipPort = await freePort();
        // A registrar that authenticates (SIP_USERS), and loopback callers admitted as a trunk is.
        const env = { SIP_PORT: String(sipPort), SIP_USERS: 'alice:alice-password', SIP_TRUSTED_CIDRS: '127.0.0.0/8' };
        // Over TCP, outbound calls too; --expose-gc: each /metrics scrape collects first, so
        // parley_call_sessions_alive counts what is kept.
        server = transport === 'udp' ? await startServer(env) : await startServer({ ...env, SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*' }, ['--expose-gc']);
      });
      after(() => server?.stop());

      describe('RFC 4475: every torture message gets what its section says', () => {
        for (const [name, expected] of Object.entries(TORTURE)) {
          const wanted = transport === 'tcp' ? (expected.tcp ?? expected.udp) : expected.udp;
          test(`§${expected.section} ${name}: ${Array.isArray(wanted) ? wanted.join(', ') : wanted} (${expected.says})`, async () => {
            const answers = transport === 'udp' ? await overUdp(sipPort, name) : await overTcp(sipPort, name, wanted);
            if (wanted === 'closed' || wanted === 'waits') return;
            // Closed at an unframeable tail: the answers of the requests before it, those sent before the close.
            const expectedStatuses = wanted === 'none' ? [] : transport === 'tcp' && expected.tcpThenClosed ? wanted.slice(0, answers.length) : wanted;
            assert.deepEqual(answers.map(statusOf), expectedStatuses, answers.map(startLine).join(' | '));
            if (name === 'bext01') assert.match(answers[0]!, /\r\nUnsupported: nothingsupportsthis, nothingsupportsthiseither\r\n/);
            if (name === 'invut' || name === 'sdp01') assert.match(answers[0]!, /\r\nAccept: application\/sdp\r\n/);
            if (name === 'regaut01') assert.match(answers[0]!, /\r\nWWW-Authenticate: Digest /);
          });
        }

        test('no call is left, and the server answers', async () => {
          await until('every call ended', () => metric(server.baseUrl, 'parley_active_calls'), (n) => n === 0, 30_000);
          assert.equal(server.proc.exitCode, null);
        });
      });

      if (transport === 'udp') {
        describe('a 200 OK never ACKed', () => {
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
      } else {
        describe("an outbound call's dialog", () => {
          const api = (path: string, body?: unknown) =>
            fetch(`${server.baseUrl}${path}`, {
              method: 'POST',
              headers: { authorization: `Bearer ${server.devKey}`, 'content-type': 'application/json' },
              body: JSON.stringify(body ?? {}),
            });

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
      }
    });
  }
});
