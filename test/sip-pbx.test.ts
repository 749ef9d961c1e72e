// SIP the way a PBX or trunk expects it: a call carried through a lossy UDP relay (its first 200 OK
// and first ACK dropped: the 2xx is resent until the ACK gets through); silence keeping the media
// path open before the agent has said anything; key presses sent as SIP INFO reaching the sideband;
// a caller that goes quiet, and baresip killed without a BYE, ended by the media timeout; 420 for an
// unsupported Require, 483 for no hops left, 482 for the same INVITE by another branch; and the
// registrar, with baresip and linphonec (two real user agents) registering with the right password
// and refused (403) with a wrong one, the bindings read back, refreshed too briefly (423), removed;
// calls through Kamailio as the trunk-facing proxy (record-routing, its Via on top), hung up from
// either side; and Parley registering upstream (SIP_REGISTRATIONS) with a provider's registrar written here:
// retried after a 503, its digest challenge answered, refreshed before expiry, seen in metrics and /readyz.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { readRtp, writeRtp } from '../src/media/rtp.ts';
import { encodeWav } from '../src/media/audio/wav.ts';
import { freePort, startBaresip, type Baresip } from './helpers/baresip.ts';
import { DigestAuth } from '../src/sip/digest.ts';
import { startKamailio } from './helpers/kamailio.ts';
import { startLinphone } from './helpers/linphone.ts';
import { G729_ONLY_OFFER, digestAuthorization, sipRequest, sipStatus } from './helpers/rawSip.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { startSipRelay, type SipRelay } from './helpers/sipRelay.ts';
import { until } from './helpers/wait.ts';

const USERS = 'alice:alice-password,bob:bob-password,carol:carol-password';

/** Short, for the tests to see a vanished caller's call end (the default is 30 s). */
const MEDIA_TIMEOUT_MS = 3000;

let server: RunningServer;
let sipPort: number;
let dir: string;
const closers: (() => unknown)[] = [];

/** The upstream provider's registrar: a UDP socket answering as the test says (bound before the server starts). */
let provider: { socket: Socket; port: number; heard: Buffer[] };
const TRUNK_USER = 'trunk-7';
const TRUNK_PASSWORD = 'p@ss,word';

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-pbx-'));
  sipPort = await freePort();
  provider = await udp();
  providerAnswers();
  // Calls from 127.0.0.1 are trusted (a PBX's address) and need no password; registrations always do.
  server = await startServer({ SIP_PORT: String(sipPort), SIP_MEDIA_TIMEOUT_MS: String(MEDIA_TIMEOUT_MS), SIP_USERS: USERS, SIP_TRUSTED_CIDRS: '127.0.0.1/32',
    SIP_REGISTRATIONS: `sip:${TRUNK_USER}:${encodeURIComponent(TRUNK_PASSWORD)}@127.0.0.1:${provider.port};expires=60`,
  });
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function conversation(id: string): Promise<any> {
  const res = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
  return res.json();
}

async function udp(): Promise<{ socket: Socket; port: number; heard: Buffer[] }> {
  const socket = createSocket('udp4');
  const heard: Buffer[] = [];
  socket.on('message', (m) => heard.push(m));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  closers.push(() => socket.close());
  return { socket, port: socket.address().port, heard };
}

/** A hand-written caller's dialog: its requests share a Call-ID and From tag, its Contact is its own socket. */
function dialogRequests(sipSocketPort: number) {
  const callId = randomBytes(8).toString('hex');
  const fromTag = randomBytes(4).toString('hex');
  return (method: string, seq: number, opts: { toTag?: string; branch?: string; body?: string; contentType?: string } = {}) =>
    [
      `${method} sip:agent@127.0.0.1:${sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${sipSocketPort};branch=${opts.branch ?? `z9hG4bK${randomBytes(6).toString('hex')}`};rport`,
      'Max-Forwards: 70',
      `From: <sip:pbx@127.0.0.1>;tag=${fromTag}`,
      `To: <sip:agent@127.0.0.1>${opts.toTag ? `;tag=${opts.toTag}` : ''}`,
      `Call-ID: ${callId}`,
      `CSeq: ${seq} ${method}`,
      `Contact: <sip:pbx@127.0.0.1:${sipSocketPort}>`,
      ...(opts.body ? [`Content-Type: ${opts.contentType ?? 'application/sdp'}`] : []),
      `Content-Length: ${Buffer.byteLength(opts.body ?? '')}`,
      '',
      opts.body ?? '',
    ].join('\r\n');
}

describe('a call through a lossy relay', () => {
  test('the dropped 200 OK is resent until the (dropped, resent) ACK; silence flows before the agent speaks; INFO key presses; a caller gone quiet is ended', async () => {
    const sip = await udp();
    const rtp = await udp();
    const relay: SipRelay = await startSipRelay({ address: '127.0.0.1', port: sipPort });
    closers.push(() => relay.close());
    const request = dialogRequests(sip.port);
    const texts = () => sip.heard.map((m) => m.toString('latin1'));
    const offer = `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${rtp.port} RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n`;
    // The caller acknowledges every 200 OK it gets (the same ACK: RFC 3261 §13.2.2.4); the relay drops the first.
    let ack: string | undefined;
    let oks = 0;
    sip.socket.on('message', (m) => {
      const text = m.toString('latin1');
      if (!/^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/.test(text)) return;
      oks++;
      ack ??= request('ACK', 1, { toTag: /\r\nTo: [^\r]*;tag=([^;\s\r]+)/.exec(text)![1]! });
      sip.socket.send(ack, relay.port, '127.0.0.1');
    });
    sip.socket.send(request('INVITE', 1, { body: offer }), relay.port, '127.0.0.1');
    const ok = await until('the 200 OK through the relay', () => texts().find((t) => /^SIP\/2\.0 200 /.test(t)), (t) => t !== undefined, 30_000);
    const heard = texts();
    assert.ok(heard.findIndex((t) => /^SIP\/2\.0 100 /.test(t)) < heard.findIndex((t) => /^SIP\/2\.0 200 /.test(t)), '100 Trying came first');
    const id = /X-Parley-Call-Id: (\S+)/.exec(ok!)![1]!;
    const toTag = /\r\nTo: [^\r]*;tag=([^;\s\r]+)/.exec(ok!)![1]!;
    await until('the call connected (an ACK got through)', () => conversation(id), (c) => c.connected_at !== null, 30_000);
    assert.deepEqual(relay.dropped, { finals: 1, acks: 1 });
    await until('the 200 OK resent after the dropped ACK', () => oks, (n) => n >= 2, 30_000);

    // Before the agent has said anything, RTP comes all the same: G.711 silence every 20 ms.
    const packets = await until('keep-alive RTP at the caller', () => rtp.heard.map((p) => readRtp(p)).filter((h) => h !== undefined), (h) => h.length >= 10, 30_000);
    assert.ok(packets.every((h) => h!.payloadType === 0 && h!.payload.length === 160 && h!.payload.every((b) => b === 0xff)), 'µ-law silence');

    // The caller sends its own audio meanwhile (silence), and presses keys by SIP INFO.
    let seq = 0;
    const sending = setInterval(() => rtp.socket.send(writeRtp({ payloadType: 0, sequenceNumber: ++seq, timestamp: seq * 160, ssrc: 42, marker: false }, Buffer.alloc(160, 0xff)), Number(/m=audio (\d+)/.exec(ok!)![1]), '127.0.0.1'), 20);
    closers.push(() => clearInterval(sending));
    const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
    closers.push(() => socket.close());
    const digits: string[] = [];
    socket.on('message', (data) => {
      const event = JSON.parse(String(data));
      if (event.type === 'parley.input_audio_buffer.dtmf') digits.push(event.digit);
    });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    sip.socket.send(request('INFO', 2, { toTag, body: 'Signal=7\r\nDuration=160\r\n', contentType: 'application/dtmf-relay' }), relay.port, '127.0.0.1');
    await until('the INFO answered', texts, (t) => t.some((m) => /^SIP\/2\.0 200 [^]*CSeq: 2 INFO/.test(m)), 30_000);
    sip.socket.send(request('INFO', 3, { toTag, body: '#', contentType: 'application/dtmf' }), relay.port, '127.0.0.1');
    sip.socket.send(request('INFO', 4, { toTag, body: '<x/>', contentType: 'application/media_control+xml' }), relay.port, '127.0.0.1');
    await until('both key presses on the sideband', () => digits.join(''), (d) => d === '7#', 30_000);
    await until('an INFO of another type refused', texts, (t) => t.some((m) => /^SIP\/2\.0 415 [^]*CSeq: 4 INFO/.test(m) && /\r\nAccept: application\/dtmf-relay/.test(m)), 30_000);

    // The caller goes quiet without a BYE: the call ends after the media timeout, and it is sent one.
    clearInterval(sending);
    const record = await until('the call ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
    assert.equal(record.end_reason, 'media_timeout');
    assert.ok(record.quality.outbound.packets > 0, 'the record counts the keep-alive packets');
    await until('a BYE to the vanished caller', texts, (t) => t.some((m) => m.startsWith('BYE ')), 30_000);
  });
});

describe('requests a UAS refuses before handling them', () => {
  /** Sends `text` straight to the SIP port and resolves with its answers once a final one came. */
  async function finalAnswer(socket: Socket, heard: Buffer[], text: string): Promise<string> {
    const before = heard.length;
    socket.send(text, sipPort, '127.0.0.1');
    const all = await until('a final answer', () => heard.slice(before).map((m) => m.toString('latin1')), (t) => t.some((m) => !/^SIP\/2\.0 1\d\d /.test(m)), 30_000);
    return all.find((m) => !/^SIP\/2\.0 1\d\d /.test(m))!;
  }

  test('420 with Unsupported, 483 with no hops left, 482 for the same INVITE by a second branch', async () => {
    const { socket, port, heard } = await udp();
    const via = `UDP 127.0.0.1:${port}`;
    const required = await finalAnswer(socket, heard, sipRequest(sipPort, 'INVITE', { via, body: G729_ONLY_OFFER, headers: ['Require: 100rel, precondition'] }));
    assert.equal(sipStatus(required), 420);
    assert.match(required, /\r\nUnsupported: 100rel, precondition\r\n/);
    const looped = sipRequest(sipPort, 'INVITE', { via, body: G729_ONLY_OFFER }).replace('Max-Forwards: 70', 'Max-Forwards: 0');
    assert.equal(sipStatus(await finalAnswer(socket, heard, looped)), 483);
    // The same INVITE (From tag, Call-ID, CSeq) under a new branch, as a forking proxy would deliver it twice.
    const first = sipRequest(sipPort, 'INVITE', { via, body: G729_ONLY_OFFER });
    assert.equal(sipStatus(await finalAnswer(socket, heard, first)), 488);
    const second = first.replace(/branch=z9hG4bK[0-9a-f]+/, `branch=z9hG4bK${randomBytes(6).toString('hex')}`);
    assert.equal(sipStatus(await finalAnswer(socket, heard, second)), 482);
  });
});

describe('baresip killed mid-call', () => {
  let caller: Baresip;

  test('no BYE ever comes: the call ends within the media timeout', async () => {
    const wav = join(dir, 'quiet.wav');
    writeFileSync(wav, encodeWav([new Int16Array(8000 * 60)], 8000));
    caller = await startBaresip(join(dir, 'baresip'), { user: 'phone', wav });
    closers.push(() => caller.stop());
    await caller.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    const out = await until('the call answered', caller.out, (o) => /X-Parley-Call-Id: (conv_\S+)/.test(o), 60_000);
    const id = /X-Parley-Call-Id: (conv_\S+)/.exec(out)![1]!;
    await until('the call connected', () => conversation(id), (c) => c.connected_at !== null, 30_000);
    caller.proc.kill('SIGKILL');
    const record = await until('the call ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
    assert.equal(record.end_reason, 'media_timeout');
  });
});

describe('the registrar', () => {
  /** A REGISTER from `socket` as `user`, answering a challenge when given one, with `headers` and `contact` (none: a query). */
  function register(port: number, user: string, opts: { contact?: string; headers?: string[]; challenge?: string; password?: string; callId?: string; seq?: number } = {}): string {
    const auth = opts.challenge ? [digestAuthorization(sipPort, opts.challenge, user, opts.password ?? `${user}-password`, 'REGISTER')] : [];
    return sipRequest(sipPort, 'REGISTER', { via: `UDP 127.0.0.1:${port}`, user, headers: [...auth, ...(opts.headers ?? [])] })
      .replace(/\r\nTo: <sip:agent@/, `\r\nTo: <sip:${user}@`)
      .replace(/\r\nContact: [^\r]*/, opts.contact ? `\r\nContact: ${opts.contact}` : '')
      .replace(/Call-ID: \S+/, `Call-ID: ${opts.callId ?? randomBytes(8).toString('hex')}`)
      .replace('CSeq: 1 REGISTER', `CSeq: ${opts.seq ?? 1} REGISTER`);
  }

  async function answer(socket: Socket, heard: Buffer[], text: string): Promise<string> {
    const before = heard.length;
    socket.send(text, sipPort, '127.0.0.1');
    const all = await until('an answer', () => heard.slice(before).map((m) => m.toString('latin1')), (t) => t.some((m) => !/^SIP\/2\.0 1\d\d /.test(m)), 30_000);
    return all.find((m) => !/^SIP\/2\.0 1\d\d /.test(m))!;
  }

  test('baresip and linphonec register with the right password, are refused (403) with a wrong one; bindings read back, 423, removed', async () => {
    const quiet = join(dir, 'quiet-register.wav');
    writeFileSync(quiet, encodeWav([new Int16Array(8000)], 8000));
    // Four user agents at once: two registering with the right password, two with a wrong one.
    const [good, bad, phone, wrongPhone] = await Promise.all([
      startBaresip(join(dir, 'reg-alice'), { user: 'alice', password: 'alice-password', wav: quiet, registrar: sipPort }),
      startBaresip(join(dir, 'reg-wrong'), { user: 'carol', password: 'not-carols', wav: quiet, registrar: sipPort }),
      startLinphone(join(dir, 'linphone-bob')),
      startLinphone(join(dir, 'linphone-wrong')),
    ]);
    closers.push(() => good.stop(), () => bad.stop(), () => phone.stop(), () => wrongPhone.stop());
    phone.command(`register sip:bob@127.0.0.1 sip:127.0.0.1:${sipPort} bob-password`);
    wrongPhone.command(`register sip:carol@127.0.0.1 sip:127.0.0.1:${sipPort} wrong-password`);
    await Promise.all([
      until('baresip registered', good.out, (o) => /SIP\/2\.0 200 OK\r\n(?:[^\r]*\r\n)*?CSeq: \d+ REGISTER/.test(o), 30_000),
      until('baresip refused', bad.out, (o) => /SIP\/2\.0 403 Forbidden\r\n(?:[^\r]*\r\n)*?CSeq: \d+ REGISTER/.test(o), 30_000),
      until('linphonec registered', phone.out, (o) => /to \[LinphoneRegistrationOk\]/.test(o), 30_000),
      until('linphonec refused', wrongPhone.out, (o) => /SIP\/2\.0 403 Forbidden\r?\n(?:[^\n]*\n)*?CSeq: \d+ REGISTER/.test(o) && /to \[LinphoneRegistrationFailed\]/.test(o), 30_000),
    ]);

    // What the store holds, read back by a REGISTER without Contact (any node would answer the same).
    const { socket, port, heard } = await udp();
    /** A REGISTER challenged, then sent again with the same Call-ID answering its challenge (a nonce admits one request); `edit` changes the second. */
    const registered = async (user: string, opts: { contact?: string; headers?: string[]; password?: string; edit?: (text: string) => string } = {}) => {
      const callId = randomBytes(8).toString('hex');
      const challenge = await answer(socket, heard, register(port, user, { ...opts, callId }));
      assert.equal(sipStatus(challenge), 401);
      return answer(socket, heard, (opts.edit ?? ((t) => t))(register(port, user, { ...opts, callId, seq: 2, challenge })));
    };
    const alice = await registered('alice');
    assert.equal(sipStatus(alice), 200);
    const baresipContact = /\r\nContact: <([^>]+)>;expires=(\d+)/.exec(alice);
    assert.ok(baresipContact, `alice's binding listed:\n${alice}`);
    assert.ok(Number(baresipContact[2]) > 0 && Number(baresipContact[2]) <= 600, 'with the time it has left');
    const bob = await registered('bob');
    assert.match(bob, /\r\nContact: <sip:bob@127\.0\.0\.1:\d+[^>]*>;expires=\d+/, "linphonec's binding");
    const carol = await registered('carol');
    assert.doesNotMatch(carol, /\r\nContact:/, 'no binding for a wrong password');
    // A user registers its own address only; a refresh too brief is refused with the shortest allowed.
    assert.equal(sipStatus(await registered('alice', { edit: (t) => t.replace(/To: <sip:alice@/, 'To: <sip:bob@') })), 403);
    const brief = await registered('alice', { contact: `<sip:alice@127.0.0.1:${port}>;expires=30` });
    assert.equal(sipStatus(brief), 423);
    assert.match(brief, /\r\nMin-Expires: 60\r\n/);
    // A second contact, then all of alice's removed.
    const two = await registered('alice', { contact: `<sip:alice@127.0.0.1:${port}>`, headers: ['Expires: 120'] });
    assert.equal((two.match(/\r\nContact: /g) ?? []).length, 2);
    const removed = await registered('alice', { contact: '*', headers: ['Expires: 0'] });
    assert.equal(sipStatus(removed), 200);
    assert.doesNotMatch(await registered('alice'), /\r\nContact:/);
  });
});

/**
 * The provider's registrar: its first REGISTER is refused 503 (Retry-After 1), every other one
 * without credentials challenged; with the right ones granted 2 s the first time (so Parley
 * refreshes within the test), 60 s after.
 */
const registrations: { text: string; answer: number }[] = [];
function providerAnswers(): void {
  const auth = new DigestAuth(new Map([[TRUNK_USER, TRUNK_PASSWORD]]));
  let granted = 0;
  provider.socket.on('message', (m, from) => {
    const text = m.toString('latin1');
    if (!text.startsWith('REGISTER ')) return;
    const head = text.split('\r\n\r\n')[0]!.split('\r\n');
    const echoed = head.filter((l) => /^(Via|From|To|Call-ID|CSeq):/i.test(l));
    const reply = (status: string, extra: string[] = []) => provider.socket.send([`SIP/2.0 ${status}`, ...echoed, ...extra, 'Content-Length: 0', '', ''].join('\r\n'), from.port, from.address);
    const contact = /\r\nContact: ([^\r]*)/.exec(text)![1]!;
    const request = { source: from.address, callId: /\r\nCall-ID: (\S+)/.exec(text)![1]!, uri: text.split(' ')[1]! };
    const answer = registrations.length === 0 ? 503 : !/\r\nAuthorization:/.test(text) ? 401 : auth.check(/\r\nAuthorization: ([^\r]*)/.exec(text)![1], { method: 'REGISTER', ...request })?.passwordRight ? 200 : 403;
    registrations.push({ text, answer });
    if (answer === 503) return reply('503 Service Unavailable', ['Retry-After: 1']);
    if (answer === 401) return reply('401 Unauthorized', [`WWW-Authenticate: ${auth.challenge(request)}`]);
    if (answer === 403) return reply('403 Forbidden');
    reply('200 OK', [`Contact: ${contact};expires=${granted++ === 0 ? 2 : 60}`]);
  });
}

describe('registering upstream (SIP_REGISTRATIONS)', () => {
  test('a 503 retried, the challenge answered, the 2 s registration refreshed; up in metrics and /readyz', async () => {
    await until('registered, then refreshed', () => registrations.filter((r) => r.answer === 200).length, (n) => n >= 2, 30_000);
    assert.deepEqual(registrations.slice(0, 5).map((r) => r.answer), [503, 401, 200, 401, 200]);
    const first = registrations[0]!.text;
    assert.match(first, /^REGISTER sip:127\.0\.0\.1:\d+ SIP\/2\.0\r\n/);
    assert.match(first, new RegExp(`\\r\\nContact: <sip:${TRUNK_USER}@127\\.0\\.0\\.1:${sipPort}>\\r\\n`), 'our SIP port, for the provider to send calls to');
    assert.match(first, /\r\nExpires: 60\r\n/);
    // One registration throughout: the same Call-ID, CSeq going up.
    const callIds = new Set(registrations.map((r) => /\r\nCall-ID: (\S+)/.exec(r.text)![1]));
    assert.equal(callIds.size, 1);
    const seqs = registrations.map((r) => Number(/\r\nCSeq: (\d+) REGISTER/.exec(r.text)![1]));
    assert.ok(seqs.every((n, i) => i === 0 || n > seqs[i - 1]!), `CSeq increasing: ${seqs}`);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const labels = `registrar="127.0.0.1:${provider.port}",user="${TRUNK_USER}"`;
    assert.match(metrics, new RegExp(`^parley_sip_registration_up\\{${labels}\\} 1$`, 'm'));
    assert.match(metrics, new RegExp(`^parley_sip_registration_failures_total\\{${labels}\\} 1$`, 'm'));
    assert.doesNotMatch(metrics, /p@ss/, 'no password in the metrics');
    const ready = await (await fetch(`${server.baseUrl}/readyz`)).json();
    assert.equal(ready.checks.sip_registrations.state, 'ready');
    assert.match(ready.checks.sip_registrations.detail, new RegExp(`${TRUNK_USER}@127\\.0\\.0\\.1:${provider.port} registered`));
  });
});

describe('behind Kamailio (the trunk-facing proxy)', () => {
  test('calls through it: record-routed, BYE from the caller and from Parley both pass through it', async () => {
    const kamailio = await startKamailio(dir, sipPort);
    closers.push(() => kamailio.stop());
    const wav = join(dir, 'quiet-kamailio.wav');
    writeFileSync(wav, encodeWav([new Int16Array(8000 * 60)], 8000));
    const phone = await startBaresip(join(dir, 'baresip-kamailio'), { user: 'carrier', wav });
    closers.push(() => phone.stop());
    const viaKamailio = `127\\.0\\.0\\.1:${kamailio.port}`;
    const calls: string[] = [];
    for (const hangUpFrom of ['caller', 'parley'] as const) {
      await phone.command('dial', `sip:agent@127.0.0.1:${kamailio.port}`);
      const newCall = (o: string) => [...o.matchAll(/\nSIP\/2\.0 200 OK\r\n(?:[^\r]*\r\n)*?X-Parley-Call-Id: (conv_\S+)/g)].map((m) => m[1]!).find((c) => !calls.includes(c));
      const answered = await until('the call answered through Kamailio', phone.out, (o) => newCall(o) !== undefined, 30_000).catch((err: Error) => {
        throw new Error(`${err.message.slice(-3000)}\nkamailio:\n${kamailio.out().slice(-3000)}\nparley:\n${server.stderr().slice(-3000)}`);
      });
      const id = newCall(answered)!;
      calls.push(id);
      await until('the call connected (the ACK came through Kamailio)', () => conversation(id), (c) => c.connected_at !== null, 30_000);
      if (hangUpFrom === 'caller') {
        await phone.command('hangup');
        const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
        assert.equal(record.end_reason, 'hangup');
      } else {
        const before = (phone.out().match(/\nBYE sip:/g) ?? []).length;
        const hangup = await fetch(`${server.baseUrl}/v1/realtime/calls/${id}/hangup`, { method: 'POST', headers: { authorization: `Bearer ${server.devKey}` } });
        assert.equal(hangup.status, 200);
        // Parley's BYE reaches baresip from Kamailio (its Route header named Kamailio), and baresip's 200 goes back that way.
        await until("Parley's BYE at baresip, from Kamailio", phone.out, (o) => new RegExp(`UDP ${viaKamailio} -> [^\\n]+\\r?\\nBYE sip:`).test(o) && (o.match(/\nBYE sip:/g) ?? []).length > before, 30_000);
        const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
        assert.equal(record.end_reason, 'hangup_request');
      }
    }
    // The 200 OKs baresip got came from Kamailio with its Record-Route, copied by Parley (RFC 3261
    // §12.1.1): baresip's ACK and BYE went through Kamailio too, not straight to Parley.
    assert.match(phone.out(), new RegExp(`UDP ${viaKamailio} -> [^\\n]+\\r?\\nSIP/2\\.0 200 OK\\r\\n(?:[^\\r]*\\r\\n)*?Record-Route: <sip:127\\.0\\.0\\.1:${kamailio.port};lr[=;>]`));
    assert.doesNotMatch(phone.out(), new RegExp(`UDP 127\\.0\\.0\\.1:${sipPort} -> `), 'nothing from Parley reached baresip directly');
    assert.doesNotMatch(phone.out(), new RegExp(`-> 127\\.0\\.0\\.1:${sipPort}\\r?\\n(?:ACK|BYE) `), 'nor from baresip to Parley');
  });
});
