// Concurrent audio-echo calls against a real Parley process on 127.0.0.1, for each server-side
// WebRTC stack: a ramp of N simultaneous calls from libwebrtc clients (@roamhq/wrtc) in child
// processes, each playing a tone; per call, from the client's getStats(): inbound packet loss,
// echo delivered and jitter over the window; the server's and the clients' CPU from /proc.
// (Setup latency, offer → answer and answer → connected, is bench/offer-answer.ts.)
//
// Passing step (the issue's criterion): every call connected, < 1 % inbound packet loss and jitter
// < 30 ms at every 1 s sample. Two sanity checks also fail a step: >= 98 % of the tone packets sent
// must come back as echo (a server that skips ticks shows no RTP loss, only missing packets), and
// the clients must manage >= 98 % of their 50 packets/s (else the step is client-limited). Both
// ratios carry about ±1 % of window-edge noise in a 15 s window (the server's lag at the edges).
// The ramp stops at the first failing step.
//
//   node --import tsx bench/calls.ts                      # both stacks, 60 s windows
//   node --import tsx bench/calls.ts --seconds 15 --stacks werift --ramp 1,5,10
//   flags: --stacks libdatachannel,werift  --seconds 60  --ramp 1,5,10,15,20,25,30,35,40,50,60,80,100
//          --clients 2 (client processes)  --max-other-cpu 25  --json <file>
import wrtc from '@roamhq/wrtc';
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { http, mintToken, startServer, type RunningServer, NO_RATE_LIMITS, NO_CALL_LIMITS } from '../test/helpers/server.ts';
import { placeCall, type PlacedCall } from './lib/placeCall.ts';
import { cpuSeconds, machineJiffies, percentile, rssMb } from './lib/proc.ts';

const { RTCAudioSource } = (wrtc as any).nonstandard;

const ECHO_PACKETS_PER_SECOND = 50; // the server sends one 20 ms Opus packet per tick
const WARMUP_MS = 5000;
const LOSS_LIMIT_PCT = 1;
const ECHO_MIN_PCT = 98;
const CLIENT_SEND_MIN_PCT = 98;
const JITTER_LIMIT_MS = 30;

// ───────────────────────────── client side (also run inside the child processes) ─────────────────────────────

/** One 10 ms timer feeds a 440 Hz tone to every call's microphone, catching up when it runs late. */
class ToneFeeder {
  private readonly sources: any[] = [];
  private sent = 0;
  private readonly start = performance.now();
  private readonly timer = setInterval(() => this.feed(), 10);
  private readonly frames: Int16Array[] = [];

  constructor() {
    // 440 Hz repeats exactly every 100 ms at 48 kHz: ten 10 ms frames, precomputed.
    for (let f = 0; f < 10; f++) {
      const samples = new Int16Array(480);
      for (let i = 0; i < 480; i++) samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * 480 + i)) / 48000));
      this.frames.push(samples);
    }
  }

  track(): any {
    const source = new RTCAudioSource();
    this.sources.push(source);
    return source.createTrack();
  }

  private feed(): void {
    const due = Math.floor((performance.now() - this.start) / 10);
    // After a long stall, skip ahead rather than bursting more than 100 ms of audio.
    if (due - this.sent > 10) this.sent = due - 10;
    for (; this.sent < due; this.sent++) {
      const samples = this.frames[this.sent % 10]!;
      for (const s of this.sources) s.onData({ samples, sampleRate: 48000, bitsPerSample: 16, channelCount: 1, numberOfFrames: 480 });
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

interface CallSample {
  /** The tone we sent (outbound-rtp) and the echo we got back (inbound-rtp). */
  packetsSent: number;
  packetsReceived: number;
  packetsLost: number;
  jitterMs: number;
  at: number;
}

async function sampleCall(pc: any): Promise<CallSample> {
  const stats = await pc.getStats();
  let s: any = { packetsReceived: 0, packetsLost: 0, jitter: 0 };
  let sent = 0;
  stats.forEach((r: any) => {
    const audio = r.kind === 'audio' || r.mediaType === 'audio';
    if (r.type === 'inbound-rtp' && audio) s = r;
    if (r.type === 'outbound-rtp' && audio) sent = r.packetsSent ?? 0;
  });
  return { packetsSent: sent, packetsReceived: s.packetsReceived ?? 0, packetsLost: s.packetsLost ?? 0, jitterMs: (s.jitter ?? 0) * 1000, at: performance.now() };
}

type WorkerRequest = { type: 'open'; baseUrl: string; apiKey: string; count: number } | { type: 'sample' } | { type: 'close' };
type WorkerReply =
  | { type: 'opened'; ok: number; errors: string[] }
  | { type: 'samples'; samples: (CallSample | null)[] }
  | { type: 'closed' };

/** A client process: opens its share of the calls, plays the tone, reports getStats() samples. */
function runWorker(): void {
  const calls: PlacedCall[] = [];
  let feeder: ToneFeeder | undefined;
  const reply = (m: WorkerReply) => process.send!(m);
  process.on('message', async (m: WorkerRequest) => {
    if (m.type === 'open') {
      feeder ??= new ToneFeeder();
      const errors: string[] = [];
      const token = await mintToken(m.baseUrl, m.apiKey);
      // A few at a time: a thundering herd would measure call setup, not steady-state media.
      for (let i = 0; i < m.count; i += 4) {
        const batch = Array.from({ length: Math.min(4, m.count - i) }, () => placeCall(m.baseUrl, token, { audioTrack: feeder!.track() }));
        for (const r of await Promise.allSettled(batch)) {
          if (r.status === 'fulfilled') calls.push(r.value);
          else errors.push(String((r.reason as Error).message));
        }
      }
      reply({ type: 'opened', ok: calls.length, errors });
    } else if (m.type === 'sample') {
      reply({ type: 'samples', samples: await Promise.all(calls.map((c) => sampleCall(c.pc).catch(() => null))) });
    } else if (m.type === 'close') {
      feeder?.stop();
      for (const c of calls) c.pc.close();
      reply({ type: 'closed' });
      // libwebrtc's finalizers crash during Node's teardown; leave directly once the replies are out.
      setTimeout(() => process.exit(0), 200);
    }
  });
}

// ───────────────────────────── orchestration ─────────────────────────────

class Worker {
  private readonly waiting: ((m: WorkerReply) => void)[] = [];
  readonly proc: ChildProcess;

  constructor() {
    this.proc = fork(import.meta.filename, ['--worker'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.proc.on('message', (m: WorkerReply) => this.waiting.shift()?.(m));
  }

  request<T extends WorkerReply>(m: WorkerRequest, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`client process did not answer ${m.type} within ${timeoutMs} ms`)), timeoutMs);
      this.waiting.push((r) => {
        clearTimeout(timer);
        resolve(r as T);
      });
      this.proc.send(m);
    });
  }

  kill(): void {
    if (this.proc.exitCode === null) this.proc.kill('SIGKILL');
  }
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

interface StepResult {
  n: number;
  /** 1-minute load average when the step started (other engineers share this machine). */
  loadAtStart: number;
  connected: number;
  setupErrors: string[];
  seconds: number;
  lossPctMax: number;
  lossPctMean: number;
  echoPctMin: number;
  clientSendPctMin: number;
  jitterMsMax: number;
  jitterMsMedian: number;
  serverCpuPct: number;
  serverRssMb: number;
  clientCpuPct: number;
  /** Whole machine, in % of one core like the others (200 = both cores of this box busy). */
  machineCpuPct: number;
  /** What neither the server nor the clients used: other engineers' work, the kernel's softirqs. */
  otherCpuPct: number;
  pass: boolean;
  why: string;
  /** Times the step was repeated because outside load spoiled a failing run. */
  retries?: number;
}

function failedStep(n: number, why: string): StepResult {
  const nan = Number.NaN;
  return {
    n, loadAtStart: round(loadavg()[0]!, 2), connected: 0, setupErrors: [], seconds: 0, lossPctMax: nan, lossPctMean: nan, echoPctMin: nan,
    clientSendPctMin: nan, jitterMsMax: nan, jitterMsMedian: nan, serverCpuPct: nan, serverRssMb: nan, clientCpuPct: nan, machineCpuPct: nan,
    otherCpuPct: nan, pass: false, why,
  };
}

/** Waits (bounded) for the 1-minute load average to fall below 1. */
async function waitForQuiet(timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (loadavg()[0]! >= 1 && Date.now() < end) await sleep(10_000);
}

async function waitForNoCalls(server: RunningServer, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const health = await http(server.baseUrl, '/healthz').catch(() => undefined);
    if (health?.body?.calls === 0) return;
    await sleep(250);
  }
}

async function runStep(server: RunningServer, n: number, seconds: number, clientProcesses: number): Promise<StepResult> {
  const loadAtStart = round(loadavg()[0]!, 2);
  const workers = Array.from({ length: Math.min(clientProcesses, n) }, () => new Worker());
  try {
    const shares = workers.map((_, i) => Math.floor(n / workers.length) + (i < n % workers.length ? 1 : 0));
    const opened = await Promise.all(
      workers.map((w, i) => w.request<Extract<WorkerReply, { type: 'opened' }>>({ type: 'open', baseUrl: server.baseUrl, apiKey: server.devKey, count: shares[i]! }, 30_000 + 2_000 * n)),
    );
    const connected = opened.reduce((a, o) => a + o.ok, 0);
    const setupErrors = [...new Set(opened.flatMap((o) => o.errors))];
    await sleep(WARMUP_MS);

    const sampleAll = async () =>
      (await Promise.all(workers.map((w) => w.request<Extract<WorkerReply, { type: 'samples' }>>({ type: 'sample' }, 30_000)))).flatMap((r) => r.samples);
    const pids = workers.map((w) => w.proc.pid!);
    const serverPid = server.proc.pid!;
    const first = await sampleAll();
    const cpu0 = { server: cpuSeconds(serverPid), clients: pids.reduce((a, p) => a + cpuSeconds(p), 0), machine: machineJiffies(), at: performance.now() };
    const maxJitter = first.map((s) => s?.jitterMs ?? 0);
    const windowEnd = performance.now() + seconds * 1000;
    while (performance.now() < windowEnd) {
      await sleep(Math.min(1000, Math.max(0, windowEnd - performance.now())));
      const samples = await sampleAll();
      samples.forEach((s, i) => (maxJitter[i] = Math.max(maxJitter[i] ?? 0, s?.jitterMs ?? Infinity)));
    }
    const last = await sampleAll();
    const cpu1 = { server: cpuSeconds(serverPid), clients: pids.reduce((a, p) => a + cpuSeconds(p), 0), machine: machineJiffies(), at: performance.now() };
    const wallSeconds = (cpu1.at - cpu0.at) / 1000;

    const perCall = last.map((s, i) => {
      const s0 = first[i];
      if (!s || !s0) return { lossPct: 100, echoPct: 0, sendPct: 0 };
      const received = s.packetsReceived - s0.packetsReceived;
      const lost = Math.max(0, s.packetsLost - s0.packetsLost);
      const sent = s.packetsSent - s0.packetsSent;
      const span = (s.at - s0.at) / 1000;
      return {
        lossPct: received + lost > 0 ? (100 * lost) / (received + lost) : 100,
        // Echo packets that came back per tone packet sent: what the server dropped or never sent.
        echoPct: sent > 0 ? (100 * received) / sent : 0,
        // The client's own pace: below 50 packets/s the client, not the server, is the limit.
        sendPct: (100 * sent) / (span * ECHO_PACKETS_PER_SECOND),
      };
    });
    const lossPctMax = Math.max(0, ...perCall.map((c) => c.lossPct));
    const echoPctMin = perCall.length ? Math.min(...perCall.map((c) => c.echoPct)) : 0;
    const sendPctMin = perCall.length ? Math.min(...perCall.map((c) => c.sendPct)) : 0;
    const jitterMsMax = maxJitter.length ? Math.max(...maxJitter) : Infinity;
    const serverPct = (100 * (cpu1.server - cpu0.server)) / wallSeconds;
    const clientPct = (100 * (cpu1.clients - cpu0.clients)) / wallSeconds;
    const machinePct = (100 * cpus().length * (cpu1.machine.busy - cpu0.machine.busy)) / (cpu1.machine.total - cpu0.machine.total);
    const problems = [
      connected < n ? `${n - connected} calls did not connect` : '',
      lossPctMax >= LOSS_LIMIT_PCT ? `loss ${round(lossPctMax, 2)} %` : '',
      echoPctMin < ECHO_MIN_PCT ? `echo delivered ${round(echoPctMin)} %` : '',
      jitterMsMax >= JITTER_LIMIT_MS ? `jitter ${round(jitterMsMax)} ms` : '',
      sendPctMin < CLIENT_SEND_MIN_PCT ? `client-limited: sent ${round(sendPctMin)} % of 50 packets/s` : '',
    ].filter(Boolean);
    return {
      n,
      loadAtStart,
      connected,
      setupErrors,
      seconds: round(wallSeconds),
      lossPctMax: round(lossPctMax, 2),
      lossPctMean: round(perCall.reduce((a, c) => a + c.lossPct, 0) / Math.max(1, perCall.length), 3),
      echoPctMin: round(echoPctMin),
      clientSendPctMin: round(sendPctMin),
      jitterMsMax: round(jitterMsMax),
      jitterMsMedian: round(maxJitter.length ? percentile(maxJitter, 50) : 0),
      serverCpuPct: round(serverPct),
      serverRssMb: rssMb(serverPid),
      clientCpuPct: round(clientPct),
      machineCpuPct: round(machinePct),
      otherCpuPct: round(machinePct - serverPct - clientPct),
      pass: problems.length === 0,
      why: problems.join(', ') || 'ok',
    };
  } finally {
    await Promise.all(workers.map((w) => w.request({ type: 'close' }, 15_000).catch(() => {})));
    await sleep(500);
    for (const w of workers) w.kill();
    await waitForNoCalls(server, 15_000);
  }
}

interface StackResult {
  stack: string;
  ramp: StepResult[];
  maxPassingN: number;
}

interface BenchOptions {
  seconds: number;
  ramp: number[];
  clients: number;
  maxOtherCpu: number;
}

async function benchStack(stack: string, opts: BenchOptions): Promise<StackResult> {
  const server = await startServer({ WEBRTC_STACK: stack, MAX_CONCURRENT_CALLS: '1000', LOG_LEVEL: 'warn', STUN_ENABLED: 'false', ...NO_RATE_LIMITS, ...NO_CALL_LIMITS });
  const result: StackResult = { stack, ramp: [], maxPassingN: 0 };
  try {
    for (const n of opts.ramp) {
      log(`[${stack}] ${n} concurrent echo calls, ${opts.seconds} s window (load ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
      let step: StepResult;
      try {
        step = await runStep(server, n, opts.seconds, opts.clients);
        // The machine is shared: a failing step during which other processes used more than
        // --max-other-cpu % (of one core) is repeated, up to twice, once the load has settled.
        for (let retry = 1; !step.pass && step.otherCpuPct > opts.maxOtherCpu && retry <= 2; retry++) {
          log(`[${stack}]   FAIL under outside load (others used ${step.otherCpuPct} % CPU): ${step.why}; repeating (${retry}/2)`);
          await waitForQuiet(300_000);
          step = { ...(await runStep(server, n, opts.seconds, opts.clients)), retries: retry };
        }
      } catch (err) {
        // A server that died mid-step (crash, or killed from outside) ends the ramp, with its last words.
        const died = server.proc.exitCode !== null || server.proc.signalCode !== null;
        if (!died) throw err;
        const why = `server exited during the step (code ${server.proc.exitCode}, signal ${server.proc.signalCode})`;
        log(`[${stack}]   ${why}; its stderr ended with:\n${server.stderr().slice(-3000)}`);
        result.ramp.push(failedStep(n, why));
        break;
      }
      result.ramp.push(step);
      log(`[${stack}]   ${step.pass ? 'PASS' : 'FAIL'} ${JSON.stringify(step)}`);
      if (!step.pass) break;
      result.maxPassingN = n;
    }
  } finally {
    await stopServer(server, stack);
  }
  return result;
}

/** SIGTERM (the drain), but never wait forever: a server that has not exited after 20 s is killed. */
async function stopServer(server: RunningServer, stack: string): Promise<void> {
  const stopped = server.stop('SIGTERM');
  const exited = await Promise.race([stopped.then(() => true), sleep(20_000).then(() => false)]);
  if (!exited) {
    log(`[${stack}] the server did not exit within 20 s of SIGTERM; killing it (pid ${server.proc.pid})`);
    server.proc.kill('SIGKILL');
    await stopped;
  }
}

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
}

function markdown(results: StackResult[], seconds: number): string {
  const out: string[] = [];
  const withRamp = results.filter((r) => r.ramp.length);
  if (withRamp.length) {
    out.push(
      `| Stack | N | Connected | Max loss % | Min echo delivered % | Min client send rate % | Max jitter (ms) | Median call's max jitter (ms) | Server CPU % | Server RSS (MB) | Clients CPU % | Other CPU % | Machine CPU % (of ${cpus().length * 100}) | Load at start | ${seconds} s result |`,
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const r of withRamp) {
      for (const s of r.ramp) {
        out.push(`| ${r.stack} | ${s.n} | ${s.connected} | ${s.lossPctMax} | ${s.echoPctMin} | ${s.clientSendPctMin} | ${s.jitterMsMax} | ${s.jitterMsMedian} | ${s.serverCpuPct} | ${s.serverRssMb} | ${s.clientCpuPct} | ${s.otherCpuPct} | ${s.machineCpuPct} | ${s.loadAtStart} | ${s.pass ? 'pass' : `fail: ${s.why}`}${s.retries ? ` (repeated ${s.retries}× for outside load)` : ''} |`);
      }
    }
    out.push('');
    for (const r of withRamp) out.push(`- ${r.stack}: largest passing N = ${r.maxPassingN}${r.ramp.at(-1)?.pass ? ' (the ramp ended without a failure)' : ''}`);
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stacks: { type: 'string', default: 'libdatachannel,werift' },
      seconds: { type: 'string', default: '60' },
      ramp: { type: 'string', default: '1,5,10,15,20,25,30,35,40,50,60,80,100' },
      clients: { type: 'string', default: '2' },
      'max-other-cpu': { type: 'string', default: '25' },
      json: { type: 'string' },
    },
  });
  const stacks = values.stacks.split(',').filter(Boolean);
  const opts: BenchOptions = {
    maxOtherCpu: Number(values['max-other-cpu']),
    seconds: Number(values.seconds),
    ramp: values.ramp.split(',').map(Number).filter((n) => n > 0),
    clients: Math.max(1, Number(values.clients)),
  };
  // Bounded: a generous budget for every step; past it the run stops itself.
  const budgetMs = stacks.length * (120_000 + opts.ramp.reduce((a, n) => a + 3 * (opts.seconds * 1000 + WARMUP_MS + 60_000 + 2_000 * n) + 600_000, 0));
  setTimeout(() => {
    log(`run exceeded its ${Math.round(budgetMs / 1000)} s budget; stopping`);
    process.exit(2);
  }, budgetMs).unref();

  const started = new Date();
  log(`calls bench: stacks ${stacks.join(', ')}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const results: StackResult[] = [];
  for (const stack of stacks) results.push(await benchStack(stack, opts));
  const report = {
    date: started.toISOString(),
    loadAverageAtEnd: loadavg(),
    options: opts,
    results,
  };
  if (values.json) writeFileSync(values.json, JSON.stringify(report, null, 2));
  process.stdout.write(`${markdown(results, opts.seconds)}\n`);
}

if (process.argv.includes('--worker')) {
  runWorker();
} else {
  main().then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`${(err as Error).stack ?? err}\n`);
      process.exit(1);
    },
  );
}
