// An operator's probe battery against a real Parley process on 127.0.0.1: wrong routes and methods,
// token attacks, bad bodies, SDP fuzz and candidate floods, malformed and slow HTTP. Prints what
// each group was answered (status counts) and fails if anything got a 5xx or the process died.
// No probe offers an ICE candidate the server's filter would let through to anything but loopback.
// Then event floods on a live call (a second server, default settings): a caller in a process of
// its own floods its data channel while another caller is watched (test/helpers/flooding.ts).
//
//   node --import tsx bench/probes.ts            # about 1,100 probes and the floods, 1-2 minutes
//   node --import tsx bench/probes.ts --floods   # the floods only
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import wrtc from '@roamhq/wrtc';
import { SDP_JUNK, mutateSdp, rng } from '../test/helpers/sdpFuzz.ts';
import { floodingCaller, underAttack } from '../test/helpers/flooding.ts';
import { attachTone, inboundAudio, openCall } from '../test/helpers/rtcClient.ts';
import { http, mintToken, startServer, NO_RATE_LIMITS, NO_CALL_LIMITS } from '../test/helpers/server.ts';
import { until } from '../test/helpers/wait.ts';

/** Event floods on a live call, against a server with the default settings. */
async function floods(): Promise<void> {
  const server = await startServer();
  try {
    const bystander = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    await bystander.waitConnected();
    await bystander.nextEvent('session.created');
    const stopTone = await attachTone(bystander);
    await until('the bystander’s echo', async () => (await inboundAudio(bystander)).packetsReceived, (n) => n >= 50);
    console.log('\nEvent floods on one call (a bystander call watched meanwhile):');
    console.log('flood                                   speech procs  bystander RTT max  /healthz max  bystander audio  attacker told');
    for (const [form, count, what] of [['orga', 5000, '5,000 Orga item-creates'], ['openai', 1000, '1,000 OpenAI cancel/create pairs']] as const) {
      const attacker = await floodingCaller(server, await mintToken(server.baseUrl, server.devKey), form, count);
      const o = await underAttack(server, bystander, attacker.go);
      console.log(
        `${what.padEnd(40)}${String(o.maxSpeechProcesses).padStart(12)}${`${Math.round(o.maxRoundTripMs)} ms`.padStart(19)}${`${Math.round(o.maxHealthzMs)} ms`.padStart(14)}${`${o.audioPacketsPerSecond.toFixed(1)} pkt/s`.padStart(17)}  ${o.attack.errorCodes.join(', ')}`,
      );
    }
    stopTone();
    bystander.close();
  } finally {
    await server.stop();
  }
}

if (process.argv.includes('--floods')) {
  await floods();
  process.exit(0);
}

type Outcome = number | string;
const results = new Map<string, Map<Outcome, number>>();
const fiveHundreds: string[] = [];

function note(group: string, what: string, outcome: Outcome): void {
  const counts = results.get(group) ?? new Map<Outcome, number>();
  counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  results.set(group, counts);
  if (typeof outcome === 'number' && outcome >= 500) fiveHundreds.push(`${group}: ${what} → ${outcome}`);
}

const server = await startServer({ HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '3000', CALL_CONNECT_TIMEOUT_MS: '1000', MAX_CONCURRENT_CALLS: '1000', ...NO_RATE_LIMITS, ...NO_CALL_LIMITS });
const base = server.baseUrl;
const key = server.devKey;
const token = await mintToken(base, key);
const started = Date.now();

async function probe(group: string, what: string, path: string, opts: Parameters<typeof http>[2] = {}): Promise<void> {
  try {
    note(group, what, (await http(base, path, opts)).status);
  } catch (err) {
    note(group, what, `error ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}`);
  }
}

/** Sends raw bytes, returns the status of the answer (or how the connection ended). */
function raw(request: string | Buffer, trickleMs = 0): Promise<Outcome> {
  const { port } = new URL(base);
  const bytes = Buffer.from(request);
  return new Promise((resolve) => {
    let text = '';
    const socket = connect({ host: '127.0.0.1', port: Number(port) }, () => {
      if (!trickleMs) return void socket.write(bytes);
      let i = 0;
      const timer = setInterval(() => (i < bytes.length && !socket.destroyed ? socket.write(bytes.subarray(i, ++i)) : clearInterval(timer)), trickleMs);
    });
    socket.on('data', (d) => {
      text += d;
      if (/\r\n\r\n/.test(text)) socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]) || 'closed without answer'));
    setTimeout(() => socket.destroy(), 10_000).unref();
  });
}

// 1. Every route and method, with and without credentials.
const paths = ['/v1/realtime/client-secrets', '/v1/realtime/ice-config', '/v1/realtime/calls', '/v1/realtime/sip/calls', '/v1/realtime/models', '/v1/realtime/voices', '/v1/realtime/conversations/conv_x', '/v1/realtime/conversations/', '/v1/realtime/conversations/%00', '/v1/realtime/', '/healthz', '/readyz', '/metrics', '/openapi.json', '/', '/v2/realtime/calls', '/v1/realtime/calls/../client-secrets'];
for (const path of paths) {
  for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']) {
    for (const auth of [undefined, token, key]) await probe('routes × methods × credentials', `${method} ${path}`, path, { method, ...(auth ? { token: auth } : {}) });
  }
}

// 2. Token and key attacks.
const [h, p, s] = token.split('.') as [string, string, string];
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
const forged = [
  `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`,
  `${b64({ alg: 'none', kid: JSON.parse(Buffer.from(h, 'base64url').toString()).kid })}.${p}.`,
  `${h}.${b64({ ...claims, sub: 'key_someoneelse' })}.${s}`,
  `${h}.${b64({ ...claims, exp: claims.exp + 86400 })}.${s}`,
  `${h}.${p}.${s.slice(0, -2)}AA`,
  `${b64({ alg: 'HS256', kid: 'sk-unknown' })}.${p}.${s}`,
  `${b64({ alg: 'RS256', kid: 'x' })}.${p}.${s}`,
  `${h}.${p}`,
  'a.b.c',
  '.'.repeat(3000),
  'x'.repeat(8000),
  key,
  'sk_parley_ai_' + 'A'.repeat(40),
  'sk_parley_ai_short',
];
for (const credential of forged) {
  for (const path of ['/v1/realtime/ice-config', '/v1/realtime/models', '/v1/realtime/conversations/conv_x']) await probe('token and key attacks', credential.slice(0, 20), path, { token: credential });
  await probe('token and key attacks', credential.slice(0, 20), '/v1/realtime/client-secrets', { method: 'POST', token: credential === key ? token : credential });
  await probe('token and key attacks', credential.slice(0, 20), '/v1/realtime/calls', { token: credential, body: { offer: {}, params: {} } });
}
for (const header of ['Basic abc', 'Bearer', 'Bearer  ', 'bearer\t' + token, 'Token ' + token, 'Bearer ' + token + ' extra', 'Bearer ' + 'é'.repeat(10)]) {
  await probe('token and key attacks', header.slice(0, 20), '/v1/realtime/ice-config', { headers: { authorization: header } });
}

// 3. Bodies: not JSON, wrong shapes and types, too deep, too large.
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
const bodies = [
  '', '{', '}', 'null', '[]', '"x"', '1e999', 'true', '{"offer":', '\u0000', '{"offer":{}}', '{"params":{}}', deep(33), deep(10_000), deep(100_000),
  '{"offer":{"sdp":1,"type":"answer","candidates":"x"},"params":[]}', '{"offer":{"sdp":"v=0","type":"offer","candidates":[{}]},"params":{"temperature":"hot","voice":7,"modalities":"audio"}}',
  JSON.stringify({ offer: { sdp: 'v=0', type: 'offer', candidates: Array(65).fill({ candidate: 'candidate:1 1 udp 1 127.0.0.1 9 typ host' }) }, params: {} }),
  JSON.stringify({ offer: { sdp: 'x'.repeat(200_000), type: 'offer', candidates: [] }, params: { instructions: 'y'.repeat(40_000) } }),
  '{"__proto__":{"admin":true},"constructor":{"prototype":{}}}',
  'x'.repeat(300_000),
];
for (const body of bodies) {
  for (const [path, auth] of [['/v1/realtime/calls', token], ['/v1/realtime/client-secrets', key]] as const) {
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) await probe('bodies', body.slice(0, 20), path, { method: 'POST', token: auth, rawBody: body, headers: { 'content-type': type } });
  }
}
for (const email of ['a@b.co', 'not-an-email', 'x'.repeat(400) + '@b.co', '%00', "a'--@b.co"]) await probe('bodies', `email ${email.slice(0, 10)}`, `/v1/realtime/client-secrets?email=${encodeURIComponent(email)}`, { method: 'POST', token: key });
const big = Buffer.alloc(14 * 1024 * 1024, 'a');
for (let i = 0; i < 20; i++) {
  try {
    const r = await fetch(base + '/v1/realtime/calls', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: big });
    await r.text();
    note('14 MB bodies (fetch)', '14 MB', r.status);
  } catch (err) {
    note('14 MB bodies (fetch)', '14 MB', `error ${(err as { cause?: { code?: string } }).cause?.code}`);
  }
}

// 4. SDP fuzz and candidate floods (every candidate is loopback or refused by the filter).
const pc = new (wrtc as any).RTCPeerConnection({ iceServers: [] });
pc.addTransceiver('audio', { direction: 'sendrecv' });
pc.addTransceiver('video', { direction: 'sendonly' });
pc.createDataChannel('orga-realtime-client-events');
const offerSdp: string = (await pc.createOffer()).sdp.replace(/^a=candidate:.*\r\n/gm, '');
pc.close();
const random = rng(7);
const lines = offerSdp.split('\r\n');
const junk = [...SDP_JUNK, 'a=candidate:1 1 udp 1 224.0.0.1 9 typ host', 'a=candidate:1 1 udp 1 169.254.169.254 80 typ host', 'a=candidate:1 1 udp 1 10.0.0.1 53 typ host', 'a=candidate:1 1 udp 1 printer.local 9 typ host'];
for (let i = 0; i < 400; i++) {
  await probe('SDP fuzz', `mutation ${i}`, '/v1/realtime/calls', { token, body: { offer: { sdp: mutateSdp(lines, random, junk), type: 'offer', candidates: [] }, params: { model: 'audio-echo' } } });
}
const flood = (n: number, address: string) => offerSdp.replace(/^(a=mid:.*\r\n)/m, (mid) => mid + Array.from({ length: n }, (_, i) => `a=candidate:${i} 1 udp 1 ${address} ${1024 + i} typ host\r\n`).join(''));
for (const [n, address] of [[64, '239.255.255.250'], [65, '127.0.0.1'], [3000, '10.0.0.1'], [3000, '0.0.0.0']] as const) {
  await probe('candidate floods', `${n} × ${address}`, '/v1/realtime/calls', { token, body: { offer: { sdp: flood(n, address), type: 'offer', candidates: [] }, params: { model: 'audio-echo' } } });
}

// 5. Malformed and slow HTTP on raw connections.
const requests = [
  'GARBAGE\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX: ' + 'a'.repeat(20_000) + '\r\n\r\n',
  'POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
  'POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n',
  'POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
  'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 'GET /\u0000 HTTP/1.1\r\n\r\n', '\r\n\r\n\r\n',
];
for (let i = 0; i < 5; i++) for (const r of requests) note('malformed HTTP', r.slice(0, 20), await raw(r));
const slowBody = `POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Length: 100\r\n\r\n{`;
note('slow body, slowloris', 'slow body', await raw(slowBody));
const slowloris = await Promise.all(Array.from({ length: 20 }, () => raw(Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX: ' + 'a'.repeat(100)), 200)));
for (const o of slowloris) note('slow body, slowloris', 'slowloris', o);

// The verdict.
const health = await http(base, '/healthz');
const alive = server.proc.exitCode === null && health.status === 200;
let total = 0;
for (const [group, counts] of results) {
  const n = [...counts.values()].reduce((a, b) => a + b, 0);
  total += n;
  console.log(`${group.padEnd(32)} ${String(n).padStart(5)}  ${[...counts].sort().map(([o, c]) => `${o}: ${c}`).join(', ')}`);
}
console.log(`${'total'.padEnd(32)} ${String(total).padStart(5)} probes in ${((Date.now() - started) / 1000).toFixed(1)} s; 5xx: ${fiveHundreds.length}; process alive: ${alive}`);
for (const f of fiveHundreds) console.log(`  5xx: ${f}`);
await server.stop();
assert.equal(fiveHundreds.length, 0, 'no probe may get a 5xx');
assert.ok(alive, 'the process must survive every probe');
await floods();
process.exit(0);
