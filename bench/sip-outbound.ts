// Outbound SIP call setup (issue 37), one node over loopback UDP, N calls in turn: the API request
// (POST /v1/realtime/sip/calls) → 201, → the INVITE at the callee, → our ACK of its 200 OK (the call
// up), and the hang-up's BYE. The callee answers at once (a UDP socket here: 180 and 200 with SDP,
// so that the figures are Parley's own), then baresip with answermode=auto (a real phone's time in).
//
//   node --import tsx bench/sip-outbound.ts [--calls 20]
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { encodeWav } from '../src/media/audio/wav.ts';
import { freePort, startBaresip } from '../test/helpers/baresip.ts';
import { startServer } from '../test/helpers/server.ts';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '20' } } });
const calls = Number(values.calls);

const sipPort = await freePort();
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-sip-outbound-'));
const server = await startServer({ SIP_PORT: String(sipPort), SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*', RATE_LIMIT_SIP_OUTBOUND_PER_KEY: '0' });
const { baseUrl, devKey: key } = server;

const api = (path: string, body: unknown) =>
  fetch(`${baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The instant callee: 180 then 200 with PCMU SDP to each INVITE; tells when the INVITE, our ACK and our BYE arrive. */
const callee = createSocket('udp4');
await new Promise<void>((r) => callee.bind(0, '127.0.0.1', () => r()));
let seen: (what: 'INVITE' | 'ACK' | 'BYE') => void = () => {};
callee.on('message', (m, from) => {
  const req = m.toString('latin1');
  const method = /^(\w+) /.exec(req)?.[1];
  const header = (name: string) => new RegExp(`^${name}: .*$`, 'mi').exec(req)?.[0] ?? '';
  const reply = (status: string, body = '') =>
    callee.send([`SIP/2.0 ${status}`, ...req.match(/^Via: .*$/gim)!, header('From'), `${header('To')}${/;tag=/.test(header('To')) ? '' : ';tag=callee'}`, header('Call-ID'), header('CSeq'), `Contact: <sip:callee@127.0.0.1:${callee.address().port}>`, ...(body ? ['Content-Type: application/sdp'] : []), `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n'), from.port, from.address);
  if (method === 'INVITE') {
    seen('INVITE');
    reply('180 Ringing');
    reply('200 OK', 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\na=sendrecv\r\n');
  }
  if (method === 'ACK') seen('ACK');
  if (method === 'BYE') {
    reply('200 OK');
    seen('BYE');
  }
});

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]!.toFixed(1)} ms, p95 ${s[Math.min(s.length - 1, Math.floor(s.length * 0.95))]!.toFixed(1)} ms`;
};

async function run(label: string, to: string, upAt: () => Promise<void>, byeAt: () => Promise<void>): Promise<void> {
  const created: number[] = [];
  const up: number[] = [];
  const bye: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    const answered = upAt();
    const res = await api('/v1/realtime/sip/calls', { to, wait_for_callee: true });
    created.push(performance.now() - started);
    const { call_id } = (await res.json()) as { call_id: string };
    await answered;
    up.push(performance.now() - started);
    const hung = performance.now();
    const ended = byeAt();
    await api(`/v1/realtime/calls/${call_id}/hangup`, {});
    await ended;
    bye.push(performance.now() - hung);
  }
  console.log(`${label} (${calls} calls): POST → 201 ${stats(created)}; POST → call up (our ACK sent) ${stats(up)}; hangup → BYE at the callee ${stats(bye)}`);
}

const next = (what: 'INVITE' | 'ACK' | 'BYE') => new Promise<void>((r) => (seen = (w) => w === what && r()));
await run('instant callee', `sip:callee@127.0.0.1:${callee.address().port}`, () => next('ACK'), () => next('BYE'));

const phoneDir = join(dataDir, 'baresip');
const phonePort = await freePort();
writeFileSync(join(dataDir, 'silence.wav'), encodeWav([new Int16Array(8000 * 120)], 8000));
const phone = await startBaresip(phoneDir, { user: 'bob', wav: join(dataDir, 'silence.wav'), listenPort: phonePort, answerMode: 'auto' });
const established = () => {
  const before = (phone.out().match(/Call established/g) ?? []).length;
  return new Promise<void>((r) => {
    const t = setInterval(() => (phone.out().match(/Call established/g) ?? []).length > before && (clearInterval(t), r()), 2);
  });
};
const closed = () => {
  const before = (phone.out().match(/\nBYE sip:/g) ?? []).length;
  return new Promise<void>((r) => {
    const t = setInterval(() => (phone.out().match(/\nBYE sip:/g) ?? []).length > before && (clearInterval(t), r()), 2);
  });
};
await run('baresip (answermode=auto)', `sip:bob@127.0.0.1:${phonePort}`, established, closed);

await phone.stop();
callee.close();
await server.stop();
rmSync(dataDir, { recursive: true, force: true });
