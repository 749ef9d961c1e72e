// SIP on every worker (issue 37): one node with PARLEY_WORKERS=1 (SIP's sockets in the node) and
// with 2 (the primary holds them and relays each message over IPC to the worker its Call-ID names:
// src/sip/clusterRelay.ts), from a raw SIP caller on loopback UDP:
// 1. the relay's hop: OPTIONS round trips one at a time (answered at once, no call made);
// 2. INVITE → 200 OK one call at a time (then ACK, BYE);
// 3. call setup under load: `--callers` callers each placing calls back to back for `--seconds`
//    (INVITE → 200 OK → ACK → BYE → 200 OK), the calls set up per second, their INVITE → 200 OK,
//    and the CPU the primary and the workers used per call, less what they use idle (the primary's
//    share is the relay's: each call is 7 messages, INVITE, 100, 180, 200, ACK, BYE, 200).
//
//   node --import tsx bench/sip-workers.ts [--options 500] [--invites 30] [--callers 8] [--seconds 20] [--workers 1,2]
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { parseArgs } from 'node:util';
import { childPids } from '../test/helpers/processes.ts';
import { freePort } from '../test/helpers/baresip.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, startServer } from '../test/helpers/server.ts';
import { cpuSeconds, loadAverage, percentile } from './lib/proc.ts';

const { values } = parseArgs({
  options: {
    options: { type: 'string', default: '500' },
    invites: { type: 'string', default: '30' },
    callers: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '20' },
    workers: { type: 'string', default: '1,2' },
  },
});

/** How long the idle processes' CPU is measured for. */
const IDLE_MS = 5000;
const tag = () => randomBytes(6).toString('hex');
const OFFER = ['v=0', 'o=- 1 1 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', 'm=audio 40000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', 'a=sendrecv', ''].join('\r\n');

/** One signalling socket, answers handed to whoever waits for them by Call-ID. */
class Caller {
  private readonly waiting = new Map<string, { match: RegExp; resolve: (text: string) => void }>();
  private constructor(
    private readonly socket: Socket,
    private readonly sipPort: number,
  ) {
    socket.on('message', (data) => {
      const text = data.toString('latin1');
      const callId = /\r\nCall-ID: (\S+)/.exec(text)?.[1];
      const waiter = callId ? this.waiting.get(callId) : undefined;
      if (waiter?.match.test(text)) {
        this.waiting.delete(callId!);
        waiter.resolve(text);
      }
    });
  }

  static async open(sipPort: number): Promise<Caller> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new Caller(socket, sipPort);
  }

  close(): void {
    this.socket.close();
  }

  private message(method: string, d: { callId: string; fromTag: string; toTag?: string; cseq: number; body?: string }): string {
    const port = this.socket.address().port;
    return [
      `${method} sip:agent@127.0.0.1:${this.sipPort} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bK${tag()};rport`,
      'Max-Forwards: 70',
      `From: <sip:bench@127.0.0.1>;tag=${d.fromTag}`,
      `To: <sip:agent@127.0.0.1>${d.toTag ? `;tag=${d.toTag}` : ''}`,
      `Call-ID: ${d.callId}`,
      `CSeq: ${d.cseq} ${method}`,
      `Contact: <sip:bench@127.0.0.1:${port}>`,
      ...(d.body ? ['Content-Type: application/sdp'] : []),
      `Content-Length: ${Buffer.byteLength(d.body ?? '')}`,
      '',
      d.body ?? '',
    ].join('\r\n');
  }

  private request(callId: string, text: string, match: RegExp): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(callId);
        reject(new Error(`no ${match} for ${callId}`));
      }, 10_000);
      this.waiting.set(callId, { match, resolve: (t) => (clearTimeout(timer), resolve(t)) });
      this.socket.send(text, this.sipPort, '127.0.0.1');
    });
  }

  /** ms from an OPTIONS to its 200. */
  async options(): Promise<number> {
    const callId = `${tag()}@bench`;
    const sent = performance.now();
    await this.request(callId, this.message('OPTIONS', { callId, fromTag: tag(), cseq: 1 }), /^SIP\/2\.0 200 /);
    return performance.now() - sent;
  }

  /** One call: ms from its INVITE to the 200 OK; then ACK, and BYE answered. */
  async call(): Promise<number> {
    const callId = `${tag()}@bench`;
    const fromTag = tag();
    const sent = performance.now();
    const ok = await this.request(callId, this.message('INVITE', { callId, fromTag, cseq: 1, body: OFFER }), /^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/);
    const setup = performance.now() - sent;
    const toTag = /\r\nTo: [^\r]*;tag=([^;\s\r]+)/.exec(ok)![1]!;
    this.socket.send(this.message('ACK', { callId, fromTag, toTag, cseq: 1 }), this.sipPort, '127.0.0.1');
    await this.request(callId, this.message('BYE', { callId, fromTag, toTag, cseq: 2 }), /^SIP\/2\.0 200 [^]*CSeq: 2 BYE/);
    return setup;
  }
}

const ms = (xs: number[]) => `${percentile(xs, 50).toFixed(2)} / ${percentile(xs, 95).toFixed(2)}`;

console.log(`bench/sip-workers.ts, load average ${loadAverage()}, ${new Date().toISOString()}, node ${process.version}\n`);
console.log('| PARLEY_WORKERS | OPTIONS round trip p50 / p95 (ms) | INVITE → 200 one at a time p50 / p95 (ms) | calls set up per s, under load | INVITE → 200 under load p50 / p95 (ms) | CPU per call: primary / workers (ms) | calls per core-second |');
console.log('|---|---|---|---|---|---|---|');
for (const workers of values.workers!.split(',').map(Number)) {
  const sipPort = await freePort();
  const server = await startServer({
    ...NO_RATE_LIMITS,
    ...NO_CALL_LIMITS,
    PARLEY_WORKERS: String(workers),
    SIP_PORT: String(sipPort),
    RATE_LIMIT_SIP_INVITES_PER_IP: '0',
    SIP_MAX_HALF_OPEN_CALLS: '1000',
    MAX_CONCURRENT_CALLS: '1000',
  });
  const callers = await Promise.all(Array.from({ length: Number(values.callers) }, () => Caller.open(sipPort)));
  const [first] = callers;
  // Warm-up: tsx compiles the call path once in each worker.
  for (let i = 0; i < 4 * workers; i++) await first!.call();

  const optionTrips: number[] = [];
  for (let i = 0; i < Number(values.options); i++) optionTrips.push(await first!.options());
  const single: number[] = [];
  for (let i = 0; i < Number(values.invites); i++) single.push(await first!.call());

  const primary = server.proc.pid!;
  const children = workers > 1 ? childPids(primary) : [];
  const cpu = () => ({ primary: cpuSeconds(primary), workers: children.reduce((sum, pid) => sum + cpuSeconds(pid), 0) });
  // What the processes use idle (heartbeats, the loop watch) is taken off the calls' share.
  const idleFrom = cpu();
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const idleTo = cpu();
  const idlePerSecond = { primary: (idleTo.primary - idleFrom.primary) / (IDLE_MS / 1000), workers: (idleTo.workers - idleFrom.workers) / (IDLE_MS / 1000) };
  const before = cpu();
  const started = performance.now();
  const end = started + Number(values.seconds) * 1000;
  const loaded: number[] = [];
  let failed = 0;
  await Promise.all(
    callers.map(async (caller) => {
      while (performance.now() < end) loaded.push(await caller.call().catch(() => (failed++, Number.NaN)));
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const after = cpu();
  const done = loaded.filter((x) => !Number.isNaN(x));
  const primaryMs = ((after.primary - before.primary - idlePerSecond.primary * elapsed) * 1000) / done.length;
  const workersMs = ((after.workers - before.workers - idlePerSecond.workers * elapsed) * 1000) / done.length;
  // Without workers the one process is both: its CPU is all in the "primary" column.
  const perCall = workers > 1 ? `${primaryMs.toFixed(2)} / ${workersMs.toFixed(2)}` : `— / ${primaryMs.toFixed(2)}`;
  console.log(
    `| ${workers} | ${ms(optionTrips)} | ${ms(single)} | ${(done.length / elapsed).toFixed(1)}${failed ? ` (${failed} failed)` : ''} | ${ms(done)} | ${perCall} | ${(1000 / (primaryMs + workersMs)).toFixed(0)} |`,
  );
  for (const c of callers) c.close();
  await server.stop();
}
console.log(`\nload average after: ${loadAverage()}`);
