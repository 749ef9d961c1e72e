// SIP with PARLEY_WORKERS=2: the primary holds the SIP port and hands each message to a worker by
// its Call-ID (src/sip/clusterRelay.ts), so calls land on both workers, every message of a dialog
// on the same one. Calls over UDP and over one TCP connection (two dialogs, two workers, one
// connection), each answered, ACKed, ended by BYE, its record naming the worker that carried it
// (NODE_ID-w1, -w2: the console's view of the record); a baresip call; a phone registering with
// Parley's registrar on one worker and its binding read on the other, one worker's nonce known on
// the other; one address's INVITEs and wrong passwords counted for the node (the primary keeps the
// counts), not per worker; an unknown dialog's BYE answered 481 by either; Parley's own upstream
// registration run once and its answers reaching the worker that sent it; outbound calls placed by
// both workers, each INVITE's answers back at its worker; the per-address connection share kept by
// the primary, counted in metrics; and the TLS door: one TLS connection answered by both workers,
// and the primary's idle timeout sparing a connection whose call a worker holds (the primary asks
// the workers) while closing an idle one.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket as TcpSocket } from 'node:net';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { encodeWav } from '../src/media/audio/wav.ts';
import { DigestAuth } from '../src/sip/digest.ts';
import { workerOfCallId } from '../src/sip/callIds.ts';
import { freePort, startBaresip } from './helpers/baresip.ts';
import { G711_OFFER, digestAuthorization, sipRequest, sipSocket, sipStatus, type SipRequestOptions } from './helpers/rawSip.ts';
import { http, startServer, type RunningServer } from './helpers/server.ts';
import { startSipPhone } from './helpers/sipPhone.ts';
import { makeCertificate } from './helpers/tls.ts';
import { until } from './helpers/wait.ts';

const ADMIN_TOKEN = 'sip-workers-admin-token-0123456789abcdef';
const WORKERS = ['swtest-w1', 'swtest-w2'];
const TRUNK_USER = 'trunk-9';
const TRUNK_PASSWORD = 'trunk-password';

let server: RunningServer;
let sipPort: number;
let dir: string;
let consoleCookie: string;
const closers: (() => unknown)[] = [];

/** The upstream provider's registrar: challenges a REGISTER without credentials, grants one with them. */
let provider: { socket: Socket; port: number; heard: string[] };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-workers-'));
  sipPort = await freePort();
  provider = await udp();
  const auth = new DigestAuth(new Map([[TRUNK_USER, TRUNK_PASSWORD]]));
  provider.socket.on('message', (m, from) => {
    const text = m.toString('latin1');
    if (!text.startsWith('REGISTER ')) return;
    const echoed = text.split('\r\n\r\n')[0]!.split('\r\n').filter((l) => /^(Via|From|To|Call-ID|CSeq):/i.test(l));
    const authorization = /\r\nAuthorization: ([^\r]*)/.exec(text)?.[1];
    const request = { source: from.address, callId: /\r\nCall-ID: (\S+)/.exec(text)![1]!, uri: text.split(' ')[1]! };
    const status = !authorization ? `401 Unauthorized\r\nWWW-Authenticate: ${auth.challenge(request)}` : auth.check(authorization, { method: 'REGISTER', ...request })?.passwordRight ? `200 OK\r\nContact: ${/\r\nContact: ([^\r]*)/.exec(text)![1]};expires=600` : '403 Forbidden';
    provider.socket.send([`SIP/2.0 ${status}`, ...echoed, 'Content-Length: 0', '', ''].join('\r\n'), from.port, from.address);
  });
  server = await startServer({
    PARLEY_WORKERS: '2',
    NODE_ID: 'swtest',
    SIP_PORT: String(sipPort),
    // Calls from 127.0.0.1 need no password (a PBX's address); 127.0.0.2 is a stranger, held to 2 connections.
    SIP_TRUSTED_CIDRS: '127.0.0.1/32',
    SIP_TCP_MAX_CONNECTIONS_PER_IP: '2',
    SIP_USERS: 'alice:alice-password',
    SIP_REGISTRATIONS: `sip:${TRUNK_USER}:${TRUNK_PASSWORD}@127.0.0.1:${provider.port}`,
    SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*',
    ADMIN_TOKEN,
  });
  const login = await http(server.baseUrl, '/console/login', { body: { token: ADMIN_TOKEN }, headers: { 'x-parley-console': '1' } });
  assert.equal(login.status, 204);
  consoleCookie = /^(parley_console=[^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]!;
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function udp(): Promise<{ socket: Socket; port: number; heard: string[] }> {
  const socket = createSocket('udp4');
  const heard: string[] = [];
  socket.on('message', (m) => heard.push(m.toString('latin1')));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  closers.push(() => socket.close());
  return { socket, port: socket.address().port, heard };
}

/** A Call-ID the relay hands to worker `index` (1 or 2): Call-IDs are a caller's own, this one picked to be sure. */
function callIdFor(index: number): string {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (workerOfCallId(id, 2) === index) return id;
  }
}

/** The record of call `id` as the console shows it (with the node that carried it). */
async function record(id: string): Promise<any> {
  return (await http(server.baseUrl, `/console/api/conversations/${id}`, { headers: { cookie: consoleCookie } })).body;
}

/**
 * A caller's dialog (`callId`) over `transport` from `sentBy`: its requests share the Call-ID and
 * From tag. `user` is the caller (From, To and Contact for a REGISTER); `contact: null` sends none.
 */
function dialog(callId: string, transport: 'UDP' | 'TCP', sentBy: string) {
  const fromTag = randomBytes(4).toString('hex');
  return (method: string, seq: number, opts: { toTag?: string; body?: string; user?: string; contact?: string | null; headers?: string[] } = {}) => {
    const user = opts.user ?? 'pbx';
    const to = method === 'REGISTER' ? user : 'agent';
    const contact = opts.contact === undefined ? `<sip:${user}@${sentBy}${transport === 'TCP' ? ';transport=tcp' : ''}>` : opts.contact;
    return [
      `${method} sip:agent@127.0.0.1:${sipPort} SIP/2.0`,
      `Via: SIP/2.0/${transport} ${sentBy};branch=z9hG4bK${randomBytes(6).toString('hex')};rport`,
      'Max-Forwards: 70',
      `From: <sip:${user}@127.0.0.1>;tag=${fromTag}`,
      `To: <sip:${to}@127.0.0.1>${opts.toTag ? `;tag=${opts.toTag}` : ''}`,
      `Call-ID: ${callId}`,
      `CSeq: ${seq} ${method}`,
      ...(contact ? [`Contact: ${contact}`] : []),
      ...(opts.headers ?? []),
      ...(opts.body ? ['Content-Type: application/sdp'] : []),
      `Content-Length: ${Buffer.byteLength(opts.body ?? '')}`,
      '',
      opts.body ?? '',
    ].join('\r\n');
  };
}

/** The messages heard for `callId` (whole ones: a stream's text split at each status line). */
const answersFor = (heard: () => string[], callId: string) => heard().flatMap((t) => t.split(/(?=SIP\/2\.0 \d{3} )/)).filter((m) => m.includes(`\r\nCall-ID: ${callId}\r\n`));

/** The final answer `text()` holds for `callId`'s request of CSeq `seq` `method`, once it is there. */
const finalFor = (text: () => string, callId: string, seq: number, method: string) =>
  until(`the final answer to ${method}`, () => answersFor(() => [text()], callId).find((m) => new RegExp(`^SIP/2\\.0 [2-6]\\d\\d [^]*CSeq: ${seq} ${method}`).test(m)), (m) => m !== undefined, 30_000) as Promise<string>;

/**
 * One call: INVITE answered 200 (the record names the worker), ACK, connected, BYE answered 200,
 * the record ended by the caller's hang-up. `send` writes a request; `heard` is what came back.
 */
async function call(callId: string, request: ReturnType<typeof dialog>, send: (text: string) => void, heard: () => string[]): Promise<string> {
  send(request('INVITE', 1, { body: G711_OFFER }));
  const ok = await until('the 200 OK', () => answersFor(heard, callId).find((m) => /^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/.test(m)), (m) => m !== undefined, 30_000);
  const id = /\r\nX-Parley-Call-Id: (\S+)/.exec(ok!)![1]!;
  const toTag = /\r\nTo: [^\r]*;tag=([^;\s\r]+)/.exec(ok!)![1]!;
  send(request('ACK', 1, { toTag }));
  await until('the call connected', () => record(id), (r) => r.connected_at !== null, 30_000);
  send(request('BYE', 2, { toTag }));
  await until('the BYE answered', () => answersFor(heard, callId).find((m) => /^SIP\/2\.0 200 [^]*CSeq: 2 BYE/.test(m)), (m) => m !== undefined, 30_000);
  const ended = await until('the record ended', () => record(id), (r) => r.state === 'ended', 30_000);
  assert.equal(ended.end_reason, 'hangup');
  return ended.node_id;
}

describe('PARLEY_WORKERS=2 with SIP_PORT', () => {
  test('SIP calls land on both workers: over UDP, and two dialogs on one TCP connection each on its worker', async () => {
    const { socket, port, heard } = await udp();
    const nodes: string[] = [];
    for (const index of [1, 2, 1, 2]) {
      const callId = callIdFor(index);
      const node = await call(callId, dialog(callId, 'UDP', `127.0.0.1:${port}`), (text) => socket.send(text, sipPort, '127.0.0.1'), () => heard);
      assert.equal(node, WORKERS[index - 1], `Call-ID ${callId} carried by worker ${index}`);
      nodes.push(node);
    }
    assert.deepEqual([...new Set(nodes)].sort(), WORKERS);

    // A trunk's one TCP connection carries calls of both workers: each answer goes back on it.
    const tcp = connect({ port: sipPort, host: '127.0.0.1' });
    closers.push(() => tcp.destroy());
    let text = '';
    tcp.on('data', (d) => (text += d.toString('latin1')));
    await new Promise((resolve) => tcp.once('connect', resolve));
    const sentBy = `127.0.0.1:${tcp.localPort}`;
    const streamNodes = await Promise.all(
      [1, 2].map((index) => {
        const callId = callIdFor(index);
        return call(callId, dialog(callId, 'TCP', sentBy), (t) => tcp.write(t), () => [text]);
      }),
    );
    assert.deepEqual(streamNodes, WORKERS);
  });

  test('a baresip call is answered and ended by its BYE on whichever worker its Call-ID names', async () => {
    const wav = join(dir, 'quiet.wav');
    writeFileSync(wav, encodeWav([new Int16Array(8000 * 60)], 8000));
    const phone = await startBaresip(join(dir, 'baresip'), { user: 'phone', wav });
    closers.push(() => phone.stop());
    await phone.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    const out = await until('the call answered', phone.out, (o) => /X-Parley-Call-Id: (conv_\S+)/.test(o), 60_000);
    const id = /X-Parley-Call-Id: (conv_\S+)/.exec(out)![1]!;
    // The Call-ID baresip made for its INVITE (in its SIP trace).
    const callId = /\nINVITE sip:[^\r\n]*\r\n(?:[^\r\n]+\r\n)*?Call-ID: ([^\r\n]+)/i.exec(out)![1]!;
    await until('the call connected', () => record(id), (r) => r.connected_at !== null, 30_000);
    await phone.command('hangup');
    const ended = await until('the record ended', () => record(id), (r) => r.state === 'ended', 30_000);
    assert.equal(ended.end_reason, 'hangup');
    assert.equal(ended.node_id, WORKERS[workerOfCallId(callId, 2) - 1]);
  });

  test("a phone registers on one worker (challenged, then granted), its binding is read on the other, and one worker's nonce is known on the other (stale there, answered again)", async () => {
    const { socket, port, heard } = await udp();
    const answer = async (callId: string, text: string) => {
      socket.send(text, sipPort, '127.0.0.1');
      const final = await until('a final answer', () => answersFor(() => heard, callId).filter((m) => !/^SIP\/2\.0 1\d\d /.test(m)), (m) => m.length > 0, 30_000);
      heard.splice(0, heard.length);
      return final[0]!;
    };
    const contact = `<sip:alice@127.0.0.1:${port}>`;
    /** REGISTERs on worker `index`'s Call-ID: challenged, then answered with alice's password (no contact: a query). */
    let lastChallenge = '';
    const registerOn = async (index: number, withContact: boolean) => {
      const callId = callIdFor(index);
      const request = dialog(callId, 'UDP', `127.0.0.1:${port}`);
      const opts = { user: 'alice', contact: withContact ? contact : null };
      lastChallenge = await answer(callId, request('REGISTER', 1, opts));
      assert.equal(sipStatus(lastChallenge), 401);
      return answer(callId, request('REGISTER', 2, { ...opts, headers: [digestAuthorization(sipPort, lastChallenge, 'alice', 'alice-password', 'REGISTER')] }));
    };
    const granted = await registerOn(1, true);
    assert.equal(sipStatus(granted), 200, granted);
    const listed = await registerOn(2, false);
    assert.equal(sipStatus(listed), 200, listed);
    assert.match(listed, new RegExp(`\\r\\nContact: <sip:alice@127\\.0\\.0\\.1:${port}>;expires=\\d+`), 'the binding made on worker 1, read on worker 2');
    // The nonce worker 2 gave, answered in a REGISTER of worker 1 (another Call-ID: a phone reusing
    // its last nonce): worker 1 knows it for this address's (the workers share its key) but it
    // admits no other request: stale, and the fresh nonce admits it. Without the key it would be
    // taken for a forgery, and the phone told nothing about its password being right.
    const callId = callIdFor(1);
    const request = dialog(callId, 'UDP', `127.0.0.1:${port}`);
    const stale = await answer(callId, request('REGISTER', 1, { user: 'alice', contact: null, headers: [digestAuthorization(sipPort, lastChallenge, 'alice', 'alice-password', 'REGISTER')] }));
    assert.equal(sipStatus(stale), 401, stale);
    assert.match(stale, /\r\nWWW-Authenticate: Digest [^\r]*stale=true/);
    const reused = await answer(callId, request('REGISTER', 2, { user: 'alice', contact: null, headers: [digestAuthorization(sipPort, stale, 'alice', 'alice-password', 'REGISTER')] }));
    assert.equal(sipStatus(reused), 200, reused);
  });

  test("one address's INVITEs are counted for the node, whichever worker each Call-ID picks", async () => {
    // RATE_LIMIT_SIP_INVITES_PER_IP (120) INVITEs from one address, on the workers in turn: challenged; past it, 503.
    const stranger = await sipSocket(sipPort, '127.0.0.3');
    closers.push(() => stranger.close());
    const statuses: (number | undefined)[] = [];
    for (let i = 0; i < 130; i++) statuses.push(sipStatus(await stranger.exchange(sipRequest(sipPort, 'INVITE', { via: stranger.via, body: G711_OFFER, callId: callIdFor((i % 2) + 1) }))));
    assert.deepEqual([statuses.filter((s) => s === 401).length, statuses.filter((s) => s === 503).length], [120, 10], `statuses: ${statuses}`);
  });

  test("one address's wrong passwords are counted for the node, whichever worker each Call-ID picks", async () => {
    // SIP_AUTH_MAX_FAILURES (5) wrong passwords from one address, on the workers in turn: then that
    // address is held on both, even with the right password.
    const guesser = await sipSocket(sipPort, '127.0.0.4');
    closers.push(() => guesser.close());
    const register = async (index: number, password: string) => {
      const callId = callIdFor(index);
      const request = (opts: SipRequestOptions) => sipRequest(sipPort, 'REGISTER', { via: guesser.via, user: 'alice', toUser: 'alice', callId, ...opts });
      const challenge = await guesser.exchange(request({}));
      assert.equal(sipStatus(challenge), 401);
      return (await guesser.exchange(request({ cseq: 2, headers: [digestAuthorization(sipPort, challenge!, 'alice', password, 'REGISTER')] })))!;
    };
    for (let i = 0; i < 5; i++) assert.match(await register((i % 2) + 1, `guess-${i}`), /^SIP\/2\.0 403 [^]*\r\nWarning: 399 parley "wrong password"/);
    for (const index of [1, 2]) assert.match(await register(index, 'alice-password'), /^SIP\/2\.0 403 [^]*\r\nWarning: 399 parley "too many wrong passwords from this address/, `on worker ${index}`);
  });

  test("outbound calls placed by either worker: each INVITE's answers reach the worker that sent it (its Call-ID names it)", async () => {
    const phone = await startSipPhone('answer');
    closers.push(() => phone.close());
    const nodes = new Set<string>();
    // The cluster hands HTTP requests to the workers in turn: six calls are placed by both.
    for (let i = 0; i < 6; i++) {
      const res = await http(server.baseUrl, '/v1/realtime/sip/calls', { token: server.devKey, body: { to: `sip:phone@127.0.0.1:${phone.port}`, wait_for_callee: true } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const active = await until(`outbound call ${i} active`, () => record(res.body.call_id), (r) => r?.state === 'active' || r?.state === 'failed', 30_000);
      assert.equal(active.state, 'active', JSON.stringify(active));
      nodes.add(active.node_id);
      assert.equal((await http(server.baseUrl, `/v1/realtime/calls/${res.body.call_id}/hangup`, { method: 'POST', token: server.devKey })).status, 200);
    }
    assert.deepEqual([...nodes].sort(), WORKERS);
  });

  test('a BYE of a dialog no worker holds is answered 481 by either', async () => {
    const { socket, port, heard } = await udp();
    for (const index of [1, 2]) {
      const callId = callIdFor(index);
      socket.send(dialog(callId, 'UDP', `127.0.0.1:${port}`)('BYE', 1, { toTag: 'nosuchtag' }), sipPort, '127.0.0.1');
      const answer = await until('the answer', () => answersFor(() => heard, callId)[0], (m) => m !== undefined, 30_000);
      assert.equal(sipStatus(answer), 481);
    }
  });

  test("the upstream registration runs on one worker, and the provider's answers reach it", async () => {
    await until('registered upstream', () => provider.heard.length, (n) => n >= 2, 30_000);
    const metrics = await until(
      'registered in the metrics',
      async () => (await fetch(`${server.baseUrl}/metrics`)).text(),
      (m) => /^parley_sip_registration_up\{[^}]*\} 1$/m.test(m),
      30_000,
    );
    // Summed over the workers: one registration, never failed (no answer went astray to the other worker).
    assert.match(metrics, new RegExp(`^parley_sip_registration_up\\{registrar="127\\.0\\.0\\.1:${provider.port}",user="${TRUNK_USER}"\\} 1$`, 'm'));
    assert.doesNotMatch(metrics, /^parley_sip_registration_failures_total\{[^}]*\} [1-9]/m);
    const callIds = new Set(provider.heard.filter((t) => t.startsWith('REGISTER ')).map((t) => /\r\nCall-ID: (\S+)/.exec(t)![1]));
    assert.equal(callIds.size, 1, 'one registration, not one per worker');
    assert.match([...callIds][0]!, /\.w1@parley$/, 'its Call-ID names the worker that sent it');
  });

  test("a stranger's stream connections past its share are closed by the primary, and counted", async () => {
    const sockets: TcpSocket[] = [];
    let closed = 0;
    for (let i = 0; i < 4; i++) {
      const s = connect({ port: sipPort, host: '127.0.0.1', localAddress: '127.0.0.2' });
      s.on('error', () => {});
      s.on('close', () => closed++);
      sockets.push(s);
      closers.push(() => s.destroy());
    }
    await until('the two past the share closed', () => closed, (n) => n === 2, 30_000);
    const metrics = await until('counted', async () => (await fetch(`${server.baseUrl}/metrics`)).text(), (m) => /^parley_rate_limited_total\{limit="sip-tcp-ip"\} 2$/m.test(m), 30_000);
    assert.match(metrics, /^parley_rate_limited_total\{limit="sip-tcp-ip"\} 2$/m);
  });
});

describe('PARLEY_WORKERS=2 with SIP over TLS', () => {
  let tlsServer: RunningServer;
  let tlsPort: number;
  let ca: Buffer;
  const IDLE_MS = 2000;

  before(async () => {
    const { cert, key } = makeCertificate(dir);
    ca = readFileSync(cert);
    tlsPort = await freePort();
    tlsServer = await startServer({ PARLEY_WORKERS: '2', NODE_ID: 'swtls', SIP_PORT: '0', SIP_TLS_PORT: String(tlsPort), SIP_TRUSTED_CIDRS: '127.0.0.1/32', SIP_TCP_IDLE_TIMEOUT_MS: String(IDLE_MS), TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
  });
  after(() => tlsServer?.stop());

  /** A TLS connection to the SIP TLS port, with what it has heard and whether it closed. */
  async function tlsConnection(): Promise<{ socket: TLSSocket; text: () => string; closed: () => boolean; sentBy: string }> {
    const socket = connectTls({ host: '127.0.0.1', port: tlsPort, ca });
    closers.push(() => socket.destroy());
    let text = '';
    let closed = false;
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => (closed = true));
    await new Promise((resolve) => socket.once('secureConnect', resolve));
    return { socket, text: () => text, closed: () => closed, sentBy: `127.0.0.1:${socket.localPort}` };
  }

  test('one TLS connection is answered by both workers; past the idle timeout an idle one is closed, one carrying a call is kept', async () => {
    const carrier = await tlsConnection();
    for (const index of [1, 2]) {
      const callId = callIdFor(index);
      carrier.socket.write(dialog(callId, 'UDP', carrier.sentBy)('OPTIONS', 1).replace('SIP/2.0/UDP', 'SIP/2.0/TLS'));
      assert.equal(sipStatus(await finalFor(carrier.text, callId, 1, 'OPTIONS')), 200, `worker ${index} answered on the connection`);
    }
    // A call on worker 2 over it.
    const callId = callIdFor(2);
    const request = dialog(callId, 'UDP', carrier.sentBy);
    const send = (text: string) => carrier.socket.write(text.replace('SIP/2.0/UDP', 'SIP/2.0/TLS'));
    send(request('INVITE', 1, { body: G711_OFFER }));
    const ok = await finalFor(carrier.text, callId, 1, 'INVITE');
    assert.equal(sipStatus(ok), 200);
    const toTag = /\r\nTo: [^\r]*;tag=([^;\s\r]+)/.exec(ok)![1]!;
    send(request('ACK', 1, { toTag }));

    // A connection opened after it, that brings nothing, is closed by the idle timeout; the call's is not.
    const idle = await tlsConnection();
    await until('the idle connection closed', idle.closed, (c) => c, 30_000);
    assert.equal(carrier.closed(), false, "the call's connection was asked about (worker 2 holds the call) and kept");
    send(request('BYE', 2, { toTag }));
    assert.equal(sipStatus(await finalFor(carrier.text, callId, 2, 'BYE')), 200);
  });
});
