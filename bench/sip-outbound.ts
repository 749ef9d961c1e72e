// Outbound SIP call setup (issue 37), one node over loopback UDP, N calls in turn: the API request
// (POST /v1/realtime/sip/calls) → 201, → the INVITE at the callee, → our ACK of its 200 OK (the call
// up), and the hang-up's BYE. The callee answers at once (a UDP socket here: 180 and 200 with SDP,
// so that the figures are Parley's own), then baresip with answermode=auto (a real phone's time in).
//
//   node --import tsx bench/sip-outbound.ts [--calls 20]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { encodeWav } from '../src/media/audio/wav.ts';
import { freePort, startBaresip } from '../test/helpers/baresip.ts';
import { startServer } from '../test/helpers/server.ts';
import { startSipPhone } from '../test/helpers/sipPhone.ts';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '20' } } });
const calls = Number(values.calls);

const sipPort = await freePort();
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-sip-outbound-'));
const server = await startServer({ SIP_PORT: String(sipPort), SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*', RATE_LIMIT_SIP_OUTBOUND_PER_KEY: '0' });
const { baseUrl, devKey: key } = server;

const api = (path: string, body: unknown) =>
  fetch(`${baseUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The instant callee (180, 200 with SDP at once); what it hears tells when our INVITE, ACK and BYE arrive. */
const callee = await startSipPhone('answer');
const next = (what: 'INVITE' | 'ACK' | 'BYE') => {
  const before = callee.heard.filter((r) => r.method === what).length;
  return new Promise<void>((r) => {
    const t = setInterval(() => callee.heard.filter((h) => h.method === what).length > before && (clearInterval(t), r()), 1);
  });
};

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

await run('instant callee', `sip:callee@127.0.0.1:${callee.port}`, () => next('ACK'), () => next('BYE'));

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
