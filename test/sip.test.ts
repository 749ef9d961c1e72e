// The SIP front door with a real SIP user agent (Debian's baresip) on loopback: a spoken question
// over G.711 answered by the agent (transcript in the record, the reply audible in what baresip
// heard), BYE from baresip ending the call, a call hung up from Parley's side (baresip gets the
// BYE) with DTMF digits read on the sideband WebSocket, an Opus call, digest authentication refusing a wrong
// password; and raw SIP over UDP and TCP: a failure response resent until its ACK, malformed
// requests and a fuzz run answered 4xx or not at all, the process alive and no call left behind.
// (RFC 4475's torture messages are test/sip-rfc.test.ts's.)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { encodeWav, readWav } from '../src/media/audio/wav.ts';
import { startBaresip, freePort, type Baresip } from './helpers/baresip.ts';
import { rms } from './helpers/pcm.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { G729_ONLY_OFFER, digestAuthorization, sipRequest, sipStatus, type SipRequestOptions } from './helpers/rawSip.ts';
import { speak } from './helpers/speech.ts';
import { makeCertificate } from './helpers/tls.ts';
import { until } from './helpers/wait.ts';

const USER = 'alice';
const PASSWORD = 'correct-horse-battery';

let server: RunningServer;
let sipPort: number;
let dir: string;
const callers: Baresip[] = [];

async function conversation(id: string): Promise<any> {
  const res = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
  return res.json();
}

/** The 200 OK baresip got, naming the call's id (the 180 before it names it too: not enough). */
const ANSWERED = /SIP\/2\.0 200 OK\r\n(?:[^\r]*\r\n)*?X-Parley-Call-Id: (conv_\S+)/;

/** The call id Parley gave the call baresip placed, once it is answered. */
async function callIdOf(caller: Baresip): Promise<string> {
  const out = await until('the call answered', caller.out, (o) => ANSWERED.test(o), 60_000);
  return ANSWERED.exec(out)![1]!;
}

/** A WAV file for baresip's microphone: mono at `rate` (8 kHz for G.711, 48 kHz for Opus), `speech` between silences. */
function microphone(name: string, parts: (string | { silenceMs: number })[], rate = 8000): string {
  const pcm = parts.map((p) => (typeof p === 'string' ? speak(p, rate) : new Int16Array((p.silenceMs * rate) / 1000)));
  const file = join(dir, name);
  writeFileSync(file, encodeWav(pcm, rate));
  return file;
}

/** A sideband WebSocket on call `id`, collecting the key presses it is told. */
async function sideband(id: string): Promise<{ socket: WebSocket; digits: string[] }> {
  const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
  const digits: string[] = [];
  socket.on('message', (data) => {
    const event = JSON.parse(String(data));
    if (event.type === 'parley.input_audio_buffer.dtmf') digits.push(event.digit);
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return { socket, digits };
}

async function caller(name: string, wav: string, opts: { password?: string; codec?: 'g711' | 'opus'; srtp?: boolean } = {}): Promise<Baresip> {
  const b = await startBaresip(join(dir, name), { user: USER, password: opts.password ?? PASSWORD, wav, codec: opts.codec, srtp: opts.srtp });
  callers.push(b);
  return b;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-'));
  sipPort = await freePort();
  // The fuzz run below sends hundreds of INVITEs from one address: the INVITE limit has its own test.
  server = await startServer({ SIP_PORT: String(sipPort), SIP_USERS: `${USER}:${PASSWORD}`, RATE_LIMIT_SIP_INVITES_PER_IP: '100000' });
});

after(async () => {
  for (const c of callers) await c.stop();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('SIP calls from baresip', () => {
  test('the agent answers a spoken question; BYE from baresip ends the call and its record', async () => {
    // When its file ends, baresip hangs up: time enough after the question for the reply. The WAV is
    // the docs' recipe's (examples/baresip/question.mjs), as baresip's config is.
    const wav = join(dir, 'question.wav');
    execFileSync(process.execPath, ['examples/baresip/question.mjs', wav, 'what time is it', '20']);
    const b = await caller('question', wav);
    await b.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    const id = await callIdOf(b);
    const record = await until('the call ended by its BYE', () => conversation(id), (c) => c.state === 'ended', 90_000);
    assert.equal(record.end_reason, 'hangup');
    assert.equal(record.quality.transport, 'sip');
    assert.ok(record.quality.inbound.packets > 100, `packets from baresip: ${record.quality.inbound.packets}`);
    const question = record.items.find((i: any) => i.role === 'user');
    // PocketSphinx hears 8 kHz G.711 poorly: a transcript, not its words.
    assert.ok(question?.text.trim().length > 0, `a transcript of the question: ${JSON.stringify(record.items)}`);
    assert.ok(record.items.some((i: any) => i.role === 'assistant' && i.text.length > 0), 'a reply');
    assert.match(b.out(), new RegExp(`UDP 127\\.0\\.0\\.1:\\d+ -> 127\\.0\\.0\\.1:${sipPort}\\r?\\nBYE `));
    await b.stop();
    const heard = b.heard();
    assert.equal(heard.length, 1, `baresip's recording: ${heard}`);
    const { samples } = readWav(readFileSync(heard[0]!));
    assert.ok(rms(samples) > 300, `the agent's reply is audible in what baresip heard (rms ${rms(samples)})`);
  });

  test("DTMF reaches the sideband WebSocket; a hangup from Parley's side sends baresip a BYE", async () => {
    const wav = microphone('silence.wav', [{ silenceMs: 120_000 }]);
    const b = await caller('keys', wav);
    await b.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    const id = await callIdOf(b);
    await until('the call up', () => conversation(id), (c) => c.connected_at !== null, 30_000);
    const { socket, digits } = await sideband(id);
    await b.command('sndcode', '42#');
    await until('the digits on the sideband', () => digits.join(''), (d) => d === '42#', 30_000);

    const hangup = await fetch(`${server.baseUrl}/v1/realtime/calls/${id}/hangup`, { method: 'POST', headers: { authorization: `Bearer ${server.devKey}` } });
    assert.equal(hangup.status, 200);
    await until('baresip got the BYE', b.out, (o) => new RegExp(`UDP 127\\.0\\.0\\.1:${sipPort} -> [^\\n]+\\r?\\nBYE `).test(o), 30_000);
    // …and answered it: the dialog is over on its side too.
    await until('baresip answered the BYE', b.out, (o) => new RegExp(`-> 127\\.0\\.0\\.1:${sipPort}\\r?\\nSIP/2\\.0 200 OK\\r\\n(?:[^\\r]*\\r\\n)*?CSeq: \\d+ BYE`).test(o), 30_000);
    const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
    assert.equal(record.end_reason, 'hangup_request');
    socket.close();
  });

  test('Opus when baresip offers it: the question heard in wideband, the reply audible, key presses told', async () => {
    const wav = microphone('opus.wav', [{ silenceMs: 1000 }, 'what time is it', { silenceMs: 30_000 }], 48_000);
    const b = await caller('opus', wav, { codec: 'opus' });
    await b.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    const id = await callIdOf(b);
    // Our answer, as baresip received it, took Opus.
    assert.match(b.out(), /SIP\/2\.0 200 OK\r\n[\s\S]*?m=audio \d+ RTP\/AVP (\d+)[\s\S]*?a=rtpmap:\1 opus\/48000\/2/);
    const answered = await until('the reply', () => conversation(id), (c) => c.items.some((i: any) => i.role === 'assistant'), 60_000);
    // Wideband speech: PocketSphinx hears the words it misses over 8 kHz G.711.
    assert.match(answered.items.find((i: any) => i.role === 'user').text, /\btime\b/);
    // baresip offers key presses at 8 kHz beside Opus: they are told all the same.
    const { socket, digits } = await sideband(id);
    await b.command('sndcode', '9*');
    await until('the digits on the sideband', () => digits.join(''), (d) => d === '9*', 30_000);
    socket.close();
    await b.command('hangup');
    const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
    assert.equal(record.end_reason, 'hangup');
    await b.stop();
    const { samples } = readWav(readFileSync(b.heard()[0]!));
    assert.ok(rms(samples) > 300, `the agent's reply is audible in what baresip heard (rms ${rms(samples)})`);
  });

  test('a call over TCP, hung up by baresip', async () => {
    const wav = microphone('tcp.wav', [{ silenceMs: 120_000 }]);
    const b = await caller('tcp', wav);
    await b.command('dial', `sip:agent@127.0.0.1:${sipPort};transport=tcp`);
    const id = await callIdOf(b);
    assert.match(b.out(), new RegExp(`TCP 127\\.0\\.0\\.1:${sipPort} -> `));
    await until('the call up', () => conversation(id), (c) => c.connected_at !== null, 30_000);
    await b.command('hangup');
    const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
    assert.equal(record.end_reason, 'hangup');
  });

  test('a wrong digest password is refused', async () => {
    const wav = microphone('refused.wav', [{ silenceMs: 10_000 }]);
    const b = await caller('wrong-password', wav, { password: 'not-the-password' });
    await b.command('dial', `sip:agent@127.0.0.1:${sipPort}`);
    // Challenged, it answers with the wrong password, and is refused (403, not challenged again): the call fails.
    const out = await until('refused', b.out, (o) => /SIP\/2\.0 403 Forbidden/.test(o), 30_000);
    assert.equal((out.match(/SIP\/2\.0 401 Unauthorized/g) ?? []).length, 1, 'one challenge');
    assert.match(out, /Authorization: Digest/);
    assert.doesNotMatch(out, /X-Parley-Call-Id/);
  });
});

describe('SIP over TLS', () => {
  let tlsServer: RunningServer;
  let tlsPort: number;
  let trusting: Agent;
  /** HTTPS to the server, trusting its self-signed certificate. */
  const api = async (path: string, method = 'GET'): Promise<any> => {
    const res = await request(tlsServer.baseUrl + path, { method: method as 'GET', headers: { authorization: `Bearer ${tlsServer.devKey}` }, dispatcher: trusting });
    return { status: res.statusCode, body: await res.body.json() };
  };
  before(async () => {
    const { cert, key } = makeCertificate(dir);
    trusting = new Agent({ connect: { ca: readFileSync(cert) } });
    tlsPort = await freePort();
    tlsServer = await startServer({ SIP_PORT: '0', SIP_TLS_PORT: String(tlsPort), SIP_USERS: `${USER}:${PASSWORD}`, TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
  });
  after(() => tlsServer?.stop());

  test('baresip calls over TLS with the certificate HTTPS serves; the call is answered and hung up', async () => {
    const wav = microphone('tls.wav', [{ silenceMs: 120_000 }]);
    const b = await caller('tls', wav);
    await b.command('dial', `sip:agent@127.0.0.1:${tlsPort};transport=tls`);
    const out = await until('the call answered over TLS', b.out, (o) => ANSWERED.test(o), 60_000);
    const id = ANSWERED.exec(out)![1]!;
    assert.match(out, new RegExp(`TLS 127\\.0\\.0\\.1:${tlsPort} -> `), 'the answer came over TLS');
    assert.match(out, new RegExp(`Contact: <sip:parley@127\\.0\\.0\\.1:${tlsPort};transport=tls>`));
    const record = async (id: string) => (await api(`/v1/realtime/conversations/${id}`)).body;
    await until('the call up', () => record(id), (c) => c.connected_at !== null, 30_000);
    assert.equal((await api(`/v1/realtime/calls/${id}/hangup`, 'POST')).status, 200);
    // Our BYE reaches baresip on its TLS connection, and it answers.
    await until('baresip got the BYE over TLS', b.out, (o) => new RegExp(`TLS 127\\.0\\.0\\.1:${tlsPort} -> [^\\n]+\\r?\\nBYE `).test(o), 30_000);
    const ended = await until('the record ended', () => record(id), (c) => c.state === 'ended', 30_000);
    assert.equal(ended.end_reason, 'hangup_request');
  });

  test('SRTP (SDES) over TLS: the question reaches the agent and its reply reaches baresip, both encrypted', async () => {
    const wav = microphone('srtp.wav', [{ silenceMs: 1000 }, 'what time is it', { silenceMs: 30_000 }]);
    const b = await caller('srtp', wav, { srtp: true });
    await b.command('dial', `sip:agent@127.0.0.1:${tlsPort};transport=tls`);
    const out = await until('the call answered', b.out, (o) => ANSWERED.test(o), 60_000);
    const id = ANSWERED.exec(out)![1]!;
    // The answer baresip got: RTP/SAVP with our own key.
    assert.match(out, /SIP\/2\.0 200 OK\r\n[\s\S]*?m=audio \d+ RTP\/SAVP [\s\S]*?a=crypto:\d+ AES_CM_128_HMAC_SHA1_80 inline:[A-Za-z0-9+/]{40}/);
    const record = async () => (await api(`/v1/realtime/conversations/${id}`)).body;
    // Decrypted here: the question is heard and answered.
    await until('the reply', record, (c) => c.items.some((i: any) => i.role === 'assistant'), 60_000);
    assert.ok((await record()).items.find((i: any) => i.role === 'user')?.text.trim().length > 0, 'a transcript of the question');
    await b.command('hangup');
    await until('the record ended', record, (c) => c.state === 'ended', 30_000);
    await b.stop();
    // Decrypted by baresip: the reply is audible in what it heard.
    const { samples } = readWav(readFileSync(b.heard()[0]!));
    assert.ok(rms(samples) > 300, `the agent's reply is audible in what baresip heard (rms ${rms(samples)})`);
  });

  test('plain text or junk on the TLS port closes that connection only', async () => {
    for (const junk of [Buffer.from('OPTIONS sip:agent@127.0.0.1 SIP/2.0\r\n\r\n'), randomBytes(4096)]) {
      const socket = connect(tlsPort, '127.0.0.1');
      socket.on('error', () => {});
      socket.write(junk);
      await new Promise((resolve) => socket.once('close', resolve));
    }
    assert.equal((await api('/readyz')).status, 200);
  });
});

describe('an INVITE flood', () => {
  let limited: RunningServer;
  let port: number;
  before(async () => {
    port = await freePort();
    // 127.0.0.2 is a trusted trunk; every 127.x address reaches loopback.
    limited = await startServer({ SIP_PORT: String(port), SIP_USERS: `${USER}:${PASSWORD}`, SIP_TRUSTED_CIDRS: '127.0.0.2/32', RATE_LIMIT_SIP_INVITES_PER_IP: '3' });
  });
  after(() => limited?.stop());

  /** The final answer to an INVITE (with `sdp`) sent from `source`. */
  async function invite(source: string, sdp: string): Promise<string> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, source, () => resolve()));
    const text = [
      `INVITE sip:agent@127.0.0.1:${port} SIP/2.0`,
      `Via: SIP/2.0/UDP ${source}:${socket.address().port};branch=z9hG4bK${randomBytes(6).toString('hex')}`,
      'Max-Forwards: 70',
      `From: <sip:${USER}@${source}>;tag=${randomBytes(4).toString('hex')}`,
      'To: <sip:agent@127.0.0.1>',
      `Call-ID: ${randomBytes(8).toString('hex')}`,
      'CSeq: 1 INVITE',
      `Contact: <sip:${USER}@${source}:${socket.address().port}>`,
      'Content-Type: application/sdp',
      `Content-Length: ${Buffer.byteLength(sdp)}`,
      '',
      sdp,
    ].join('\r\n');
    const answer = new Promise<string>((resolve) =>
      socket.on('message', (m) => {
        if (!/^SIP\/2\.0 1\d\d/.test(m.toString('latin1'))) resolve(m.toString('latin1'));
      }),
    );
    socket.send(text, port, '127.0.0.1');
    try {
      return await answer;
    } finally {
      socket.close();
    }
  }
  const G729_ONLY = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\n';
  const statusOf = (answer: string) => Number(/^SIP\/2\.0 (\d{3})/.exec(answer)![1]);

  test('an address past RATE_LIMIT_SIP_INVITES_PER_IP gets 503 with Retry-After; other addresses and trusted trunks go on', async () => {
    for (let i = 0; i < 3; i++) assert.equal(statusOf(await invite('127.0.0.1', G729_ONLY)), 401, `INVITE ${i + 1}: challenged`);
    const refused = await invite('127.0.0.1', G729_ONLY);
    assert.equal(statusOf(refused), 503);
    const retryAfter = Number(/\r\nRetry-After: (\d+)\r\n/.exec(refused)?.[1]);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    // Another address has its own count.
    assert.equal(statusOf(await invite('127.0.0.3', G729_ONLY)), 401);
    // The trunk's address is held by the call limits only: admitted, then told we speak no G.729.
    for (let i = 0; i < 5; i++) assert.equal(statusOf(await invite('127.0.0.2', G729_ONLY)), 488);
    const metrics = await (await fetch(`${limited.baseUrl}/metrics`)).text();
    assert.match(metrics, /parley_rate_limited_total\{limit="sip-invite-ip"\} 1\n/);
  });
});

describe('raw SIP', () => {
  /** Sends `text` over UDP and resolves with the first final answer (or undefined after `waitMs`). */
  function exchange(text: string | Buffer, waitMs = 2000): Promise<string | undefined> {
    return new Promise((resolve) => {
      const socket = createSocket('udp4');
      const timer = setTimeout(() => done(undefined), waitMs);
      const done = (answer: string | undefined) => {
        clearTimeout(timer);
        socket.close();
        resolve(answer);
      };
      socket.on('message', (m) => {
        const text = m.toString('latin1');
        if (!/^SIP\/2\.0 1\d\d/.test(text)) done(text);
      });
      socket.send(text, sipPort, '127.0.0.1');
    });
  }

  const status = sipStatus;
  const request = (method: string, opts: Omit<SipRequestOptions, 'via' | 'user'> = {}) => sipRequest(sipPort, method, { ...opts, user: USER });
  /** An Authorization header answering the challenge in `answer`. */
  const authorization = (answer: string, method: string) => digestAuthorization(sipPort, answer, USER, PASSWORD, method);

  const G729_ONLY = G729_ONLY_OFFER;

  test('OPTIONS, unknown dialogs, unauthenticated INVITEs, INVITEs without a codec we speak', async () => {
    assert.equal(status(await exchange(request('OPTIONS'))), 200);
    assert.equal(status(await exchange(request('BYE', { toTag: 'nosuch' }))), 481);
    assert.equal(status(await exchange(request('INVITE', { toTag: 'nosuch', body: G729_ONLY }))), 481);
    assert.equal(status(await exchange(request('REGISTER'))), 401, 'the registrar challenges');
    assert.equal(status(await exchange(request('CANCEL'))), 481, 'a CANCEL of no INVITE');
    /** An INVITE challenged, then sent again with the same Call-ID and an answer to its challenge (a nonce admits one request). */
    const authenticated = async (opts: Omit<SipRequestOptions, 'via' | 'user'>) => {
      const callId = randomBytes(8).toString('hex');
      const challenge = await exchange(request('INVITE', { ...opts, callId }));
      assert.equal(status(challenge), 401);
      return exchange(request('INVITE', { ...opts, callId, cseq: 2, headers: [authorization(challenge!, 'INVITE')] }));
    };
    assert.equal(status(await authenticated({})), 488, 'no SDP');
    assert.equal(status(await authenticated({ body: G729_ONLY })), 488, 'G.729 only');
    // A CSeq naming another method: readable enough to be told it is wrong.
    assert.equal(status(await exchange(request('INVITE').replace(/CSeq: 1 INVITE/, 'CSeq: 1 BYE'))), 400);
    // Without a Call-ID it is malformed, and told so (RFC 4475 §3.3.1); without a Via (noise) or
    // oversized it cannot be answered: silence (the three wait together).
    const [noCallId, ...unanswerable] = await Promise.all([
      exchange(request('INVITE').replace(/Call-ID: \S+\r\n/, ''), 2000),
      exchange(randomBytes(300), 500),
      exchange(request('INVITE', { headers: [`X-Padding: ${'a'.repeat(30_000)}`] }), 500),
    ]);
    assert.equal(status(noCallId), 400, 'no Call-ID');
    assert.deepEqual(unanswerable, [undefined, undefined], 'noise, oversized');
  });

  test('a call in raw SIP: challenged, answered with SDP, ACKed, put on hold by re-INVITE, ended by BYE', async () => {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    const port = socket.address().port;
    const heard: string[] = [];
    socket.on('message', (m) => heard.push(m.toString('latin1')));
    const callId = randomBytes(8).toString('hex');
    const fromTag = randomBytes(4).toString('hex');
    const offer = (direction: string) => `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\na=${direction}\r\n`;
    const send = (method: string, seq: number, opts: { body?: string; headers?: string[]; toTag?: string } = {}) => {
      const text = request(method, opts)
        .replace(/Call-ID: \S+/, `Call-ID: ${callId}`)
        .replace(/;tag=[0-9a-f]+\r\nTo:/, `;tag=${fromTag}\r\nTo:`)
        .replace(/CSeq: 1 /, `CSeq: ${seq} `)
        .replace('127.0.0.1:5999', `127.0.0.1:${port}`);
      socket.send(text, sipPort, '127.0.0.1');
    };
    const answer = (what: string, pattern: RegExp) => until(what, () => heard.find((m) => pattern.test(m)), (m) => m !== undefined, 30_000) as Promise<string>;
    try {
      send('INVITE', 1, { body: offer('sendrecv') });
      const challenge = await answer('a challenge', /^SIP\/2\.0 401 /);
      send('INVITE', 2, { body: offer('sendrecv'), headers: [authorization(challenge, 'INVITE')] });
      const ok = await answer('the answer', /^SIP\/2\.0 200 [^]*CSeq: 2 INVITE/);
      assert.ok(heard.some((m) => /^SIP\/2\.0 100 /.test(m)) && heard.some((m) => /^SIP\/2\.0 180 /.test(m)), 'Trying and Ringing came first');
      assert.match(ok, /m=audio \d+ RTP\/AVP 0 101/);
      assert.match(ok, /a=sendrecv/);
      const toTag = /\r\nTo: [^\r]*;tag=([^;\s]+)/.exec(ok)![1]!;
      const id = /X-Parley-Call-Id: (\S+)/.exec(ok)![1]!;
      send('ACK', 2, { toTag });
      await until('the call connected', () => conversation(id), (c) => c.connected_at !== null, 30_000);

      send('INVITE', 3, { toTag, body: offer('sendonly') });
      const held = await answer('the hold answered', /^SIP\/2\.0 200 [^]*CSeq: 3 INVITE/);
      assert.match(held, /a=recvonly/);
      send('ACK', 3, { toTag });
      send('INVITE', 4, { toTag, body: offer('sendrecv') });
      const resumed = await answer('the resume answered', /^SIP\/2\.0 200 [^]*CSeq: 4 INVITE/);
      assert.match(resumed, /a=sendrecv/);
      send('ACK', 4, { toTag });

      send('BYE', 5, { toTag });
      await answer('the BYE answered', /^SIP\/2\.0 200 [^]*CSeq: 5 BYE/);
      const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
      assert.equal(record.end_reason, 'hangup');
      assert.equal(record.quality.transport, 'sip');
      send('BYE', 6, { toTag });
      await answer('a second BYE refused', /^SIP\/2\.0 481 [^]*CSeq: 6 BYE/);
    } finally {
      socket.close();
    }
  });

  test('a failure response to an INVITE is resent over UDP until its ACK (Timer G)', async () => {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    const challenges: string[] = [];
    socket.on('message', (m) => {
      if (/^SIP\/2\.0 401 /.test(m.toString('latin1'))) challenges.push(m.toString('latin1'));
    });
    try {
      const invite = request('INVITE', { body: G729_ONLY }).replace('127.0.0.1:5999', `127.0.0.1:${socket.address().port}`);
      socket.send(invite, sipPort, '127.0.0.1');
      // Sent, then again T1 (500 ms) later.
      await until('the challenge resent', () => challenges.length, (n) => n >= 2, 5000);
      // The ACK of a failure response is the INVITE's own: same Via (branch), From, Call-ID, CSeq number; the To of the response.
      const to = /\r\nTo: ([^\r]*)/.exec(challenges[0]!)![1]!;
      const ack = invite
        .replace(/^INVITE /, 'ACK ')
        .replace(/CSeq: 1 INVITE/, 'CSeq: 1 ACK')
        .replace(/\r\nTo: [^\r]*/, `\r\nTo: ${to}`)
        .replace(/Content-Type: [^\r]*\r\n/, '')
        .replace(/Content-Length: \d+\r\n\r\n[^]*$/, 'Content-Length: 0\r\n\r\n');
      socket.send(ack, sipPort, '127.0.0.1');
      // A copy already on its way when the ACK left is let through.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const acknowledged = challenges.length;
      // Unacknowledged, copies would keep coming: 1.5, 3.5, 7.5 s after the first.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal(challenges.length, acknowledged, 'nothing resent after the ACK');
    } finally {
      socket.close();
    }
  });

  test('over TCP: OPTIONS answered on the connection; an unframeable stream closes it', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(sipPort, '127.0.0.1', () => socket.write(request('OPTIONS').replace('SIP/2.0/UDP', 'SIP/2.0/TCP')));
      let got = '';
      socket.on('data', (d) => {
        got += d;
        if (got.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on('error', reject);
    });
    assert.equal(status(answer), 200);
    const closed = await new Promise<boolean>((resolve) => {
      const socket = connect(sipPort, '127.0.0.1', () => socket.write('INVITE sip:x SIP/2.0\r\nVia: SIP/2.0/TCP x\r\n\r\n'));
      socket.on('close', () => resolve(true));
      socket.on('error', () => {});
      socket.resume();
    });
    assert.ok(closed);
  });

  test('a fuzz run of mutated INVITEs: 4xx or silence, the process alive, no call left', async () => {
    const base = Buffer.from(request('INVITE', { body: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0 8 101\r\na=rtpmap:101 telephone-event/8000\r\n' }));
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    // A few dozen datagrams, sent at once and waited for once (the 22,000-message fuzz of the
    // parser is a unit test: test/unit/sip.test.ts); here the point is the whole server's answer.
    const statuses = new Map<number | undefined, number>();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 48; i++) {
      const m = Buffer.from(base);
      let mutated: Buffer = m;
      switch (i % 4) {
        case 0:
          for (let k = 0; k < 1 + random(8); k++) m[random(m.length)] = random(256);
          break;
        case 1:
          mutated = m.subarray(0, random(m.length));
          break;
        case 2: {
          // A header line repeated, emptied or swapped for noise.
          const lines = m.toString('latin1').split('\r\n');
          const at = 1 + random(lines.length - 1);
          lines[at] = [lines[at]! + lines[at]!, '', ':', 'Content-Length: 99999', 'CSeq: x INVITE', 'Via: '][random(6)]!;
          mutated = Buffer.from(lines.join('\r\n'), 'latin1');
          break;
        }
        default:
          mutated = Buffer.concat([m.subarray(0, random(m.length)), randomBytes(random(200))]);
      }
      pending.push(
        exchange(mutated, 1500).then((answer) => {
          const s = status(answer);
          statuses.set(s, (statuses.get(s) ?? 0) + 1);
        }),
      );
    }
    await Promise.all(pending);
    for (const s of statuses.keys()) assert.ok(s === undefined || (s >= 400 && s < 500), `status ${s} among ${JSON.stringify([...statuses])}`);
    assert.ok([...statuses.keys()].some((s) => s !== undefined), `some mutations are answered: ${JSON.stringify([...statuses])}`);
    assert.equal(server.proc.exitCode, null, 'the server is alive');
    assert.equal(status(await exchange(request('OPTIONS'))), 200, 'and answers');
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /^parley_active_calls 0$/m);
  });
});
