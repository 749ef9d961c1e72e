// SIP call setup as a PBX sees it (issue 37), on one node over loopback UDP: for each of N calls in
// turn, INVITE → 100 Trying and INVITE → 200 OK (then ACK and BYE), sent straight to the SIP port
// and through a lossy relay that drops the first 200 OK and the first ACK of each call (the 2xx is
// resent after T1 = 500 ms, then again after the lost ACK). Loopback callers are admitted without
// digest and counted by the INVITE limit (the in-process store, no Redis), as an untrusted source is.
//
//   node --import tsx bench/sip-pbx.ts [--calls 10] [--parley /tmp/before/src/cli/main.ts]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/baresip.ts';
import { LOOPBACK_SERVER_ENV } from '../test/helpers/server.ts';
import { startSipRelay } from '../test/helpers/sipRelay.ts';

const { values } = parseArgs({
  options: {
    parley: { type: 'string', default: resolve(import.meta.dirname, '../src/cli/main.ts') },
    calls: { type: 'string', default: '10' },
  },
});
const calls = Number(values.calls);

const sipPort = await freePort();
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-sip-pbx-'));
const proc = spawn(process.execPath, ['--import', 'tsx', values.parley!, 'serve'], {
  env: { ...process.env, ...LOOPBACK_SERVER_ENV, DATA_DIR: dataDir, SIP_PORT: String(sipPort), RATE_LIMIT_SIP_INVITES_PER_IP: '100000' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((ready) => {
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
    if (/parley ready at/.test(out)) ready();
  });
});

/** One call to `port`: ms to 100 Trying and to the first 200 OK that reached us; ACKed (each 200), then hung up. */
async function call(socket: Socket, port: number): Promise<{ trying: number; ok: number }> {
  const local = socket.address().port;
  const callId = randomBytes(8).toString('hex');
  const head = (method: string, seq: number, toTag = '') =>
    [
      `${method} sip:agent@127.0.0.1:${sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK${randomBytes(6).toString('hex')};rport`,
      'Max-Forwards: 70',
      'From: <sip:bench@127.0.0.1>;tag=b1',
      `To: <sip:agent@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}`,
      `Call-ID: ${callId}`,
      `CSeq: ${seq} ${method}`,
      `Contact: <sip:bench@127.0.0.1:${local}>`,
    ].join('\r\n');
  const sdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';
  const started = performance.now();
  let trying = NaN;
  let ack: string | undefined;
  const ok = await new Promise<number>((resolve) => {
    const listener = (m: Buffer) => {
      const text = m.toString('latin1');
      if (!text.includes(`Call-ID: ${callId}`)) return;
      if (/^SIP\/2\.0 100 /.test(text) && Number.isNaN(trying)) trying = performance.now() - started;
      if (/^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/.test(text)) {
        const at = performance.now() - started;
        ack ??= `${head('ACK', 1, /\r\nTo: [^\r]*;tag=([^;\s\r]+)/.exec(text)![1]!)}\r\nContent-Length: 0\r\n\r\n`;
        socket.send(ack, port, '127.0.0.1');
        resolve(at);
      }
    };
    socket.on('message', listener);
    socket.send(`${head('INVITE', 1)}\r\nContent-Type: application/sdp\r\nContent-Length: ${sdp.length}\r\n\r\n${sdp}`, port, '127.0.0.1');
  });
  // The lossy relay dropped the first ACK: the 2xx comes again and is ACKed again; then BYE.
  await new Promise((r) => setTimeout(r, port === sipPort ? 50 : 2000));
  const toTag = /;tag=([^;\s\r]+)$/.exec(ack!.split('\r\n').find((l) => l.startsWith('To:'))!)![1]!;
  socket.send(`${head('BYE', 2, toTag)}\r\nContent-Length: 0\r\n\r\n`, port, '127.0.0.1');
  socket.removeAllListeners('message');
  socket.on('message', (m) => {
    // A retransmitted 2xx still gets its ACK.
    if (ack && /^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/.test(m.toString('latin1'))) socket.send(ack, port, '127.0.0.1');
  });
  return { trying, ok };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const socket = createSocket('udp4');
await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
const relay = await startSipRelay({ address: '127.0.0.1', port: sipPort });
for (const [name, port] of [['direct', sipPort], ['lossy relay', relay.port]] as const) {
  await call(socket, port); // warm-up (tsx compiles the call path once)
  const results = [];
  for (let i = 0; i < calls; i++) results.push(await call(socket, port));
  const trying = results.map((r) => r.trying);
  const ok = results.map((r) => r.ok);
  console.log(`${name}: ${calls} calls; INVITE → 100 Trying median ${pct(trying, 50).toFixed(1)} ms (p90 ${pct(trying, 90).toFixed(1)}); INVITE → 200 OK median ${pct(ok, 50).toFixed(1)} ms (p90 ${pct(ok, 90).toFixed(1)})`);
}
console.log(`relay dropped ${relay.dropped.finals} final responses and ${relay.dropped.acks} ACKs`);
relay.close();
socket.close();
proc.kill('SIGTERM');
await new Promise((r) => proc.once('exit', r));
rmSync(dataDir, { recursive: true, force: true });
