// Capacity of one Parley process: a ramp of concurrent calls from one load-generator process on
// libdatachannel that costs almost nothing per call (pre-encoded Opus sent with each call's RTP
// header, no codec work per call; bench/lib/loadCall.ts), the server pinned to one core and the
// load generator to another (taskset).
//
// --model audio-echo (default): every call plays bench/lib/markerClip.ts in a loop; the agent plays
// it back ECHO_DELAY_MS later. Any other model (parley-offline, orga-1-beta): every call asks
// --question (flite), stays silent while the agent answers and asks again (bench/lib/talkScript.ts).
// --model remote: agent calls whose models run elsewhere — STT_URL, LLM_BASE_URL and TTS_URL point at
// OpenAI-compatible stand-ins in a process of their own on --backends-cpu (bench/lib/remoteModels.ts),
// answering after fixed latencies with real speech; each caller asks every --ask-every seconds (10;
// most of the time it listens), or never with --listen-only. Parley-added latency = voice-to-voice
// minus what an agent costing nothing would take with the same turn rule and backends (the backends'
// time, the VAD's silence; computed once from the question's audio). Such a step passes with no lost
// audio, every question answered and the added latency's p95 < 100 ms.
//
// Each step adds calls up to N, waits --warmup seconds, then measures a --seconds window:
//   loss         RTP sequence gaps in the agent's stream (per call; the worst call is shown)
//   delivered    echo packets received per 20 ms of the window (a server that skips ticks sends
//                fewer packets without any sequence gap); echo calls only
//   jitter       RFC 3550 interarrival jitter of the agent's stream, sampled every second for every
//                call; the p95 and the maximum over all samples
//   echo delay   from sending a burst of the clip to its echo's first packet (ECHO_DELAY_MS
//                included), found from packet sizes (bench/lib/markerClip.ts)
//   voice-to-voice  talking calls: from the question's last loud sample to the answer's first loud
//                20 ms, at the caller
//   memory       the server's RSS after each step, and its growth per call added since the step before
//   waited       how long the server's threads were runnable but had no CPU (schedstat run delay,
//                summed over its threads), in % of the window: taken by other work on its core, or by
//                its own other threads there (one core for all of them); compare it between runs
//   CPU          user + system time of the server and of the load generator from /proc, in % of one
//                core, overall and per call; "other" is the rest of the machine (other work)
// A step passes when every call connected, every call's loss (and, for echo, missing echo) stays
// < 1 %, the p95 jitter is < 20 ms and, for talking calls, the voice-to-voice p50 is < 800 ms. A
// step in which the load generator itself sent over 1 % of its packets late (its core shared with
// other work) says so beside its result: rerun it. The ramp stops at the first failing step
// (--keep-going runs them all). The table goes to stdout, the progress (a JSON line a step) to stderr.
//
//   node --import tsx bench/loadgen.ts                                   # echo calls: 25, 50, 60, … 160; 60 s windows
//   node --import tsx bench/loadgen.ts --ramp 10 --seconds 10            # a quick look
//   node --import tsx bench/loadgen.ts --ramp 50,100 --env OPUS_COMPLEXITY=10
//   node --import tsx bench/loadgen.ts --ramp 100 --ptime 10             # callers sending 10 ms packets
//   node --import tsx bench/loadgen.ts --model parley-offline --ramp 1,2,3,4,6
//   npm run bench:capacity -- --model remote --ramp 25,50,75,100 --seconds 30
//   npm run bench:capacity -- --model remote --listen-only --ramp 50,100,150 --seconds 20
//   node --import tsx bench/loadgen.ts --env PARLEY_WORKERS=2 --server-cpu 0-1 --loadgen-cpu 0-1   # every core
//   (the server's CPU and memory are those of its whole process tree: with PARLEY_WORKERS, its workers)
//   node --import tsx bench/loadgen.ts --ramp 50 --server-node-arg=--cpu-prof --server-node-arg=--cpu-prof-dir=/tmp/prof
//   flags: --ramp 25,50,60,70,80,90,100,110,120,140,160  --seconds 60  --warmup 5  --ptime 20 (10, 20, 40, 60)
//          --model audio-echo  --question "What time is it?"  --stack libdatachannel
//          --ask-every 10 (remote; others ask again once answered)  --listen-only
//          --transcription-ms 100  --first-token-ms 150  --first-audio-ms 100  --backends-cpu (= --loadgen-cpu)
//          --server-cpu 0  --loadgen-cpu 1  (--no-pin: leave both unpinned)  --setup-concurrency 8
//          --env KEY=VALUE (a server setting, repeatable)  --server-node-arg ARG (repeatable)
//          --server-output FILE (the server's stdout and stderr)  --keep-going  --json FILE
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startServer, type RunningServer, NO_RATE_LIMITS, NO_CALL_LIMITS } from '../test/helpers/server.ts';
import { LoadCall, type AgentAudio } from './lib/loadCall.ts';
import { Pacer, type Probe } from './lib/pacer.ts';
import { buildClip, ClipPlayer, OnsetMatcher } from './lib/markerClip.ts';
import { buildQuestion, TalkScript, type Question } from './lib/talkScript.ts';
import { idealVoiceToVoiceMs, startBackendsProcess, type RemoteLatencies } from './lib/remoteModels.ts';
import { cpuSeconds, loadAverage, machineJiffies, percentile, pin, processTree, rssMb, treeCpuSeconds, treeRunDelaySeconds } from './lib/proc.ts';
import { between, type ReceiveSnapshot } from './lib/receiveStats.ts';

const ECHO_PACKETS_PER_SECOND = 50; // Parley sends one 20 ms packet per tick
const LOSS_LIMIT_PCT = 1;
const JITTER_P95_LIMIT_MS = 20;
const SEND_MIN_PCT = 99;
const SETUP_ATTEMPTS = 3;
const VOICE_TO_VOICE_P50_LIMIT_MS = 800;
const ADDED_P95_LIMIT_MS = 100;

const { values } = parseArgs({
  options: {
    ramp: { type: 'string', default: '25,50,60,70,80,90,100,110,120,140,160' },
    seconds: { type: 'string', default: '60' },
    warmup: { type: 'string', default: '5' },
    ptime: { type: 'string', default: '20' },
    stack: { type: 'string', default: 'libdatachannel' },
    model: { type: 'string', default: 'audio-echo' },
    question: { type: 'string', default: 'What time is it?' },
    'ask-every': { type: 'string' },
    'listen-only': { type: 'boolean', default: false },
    'transcription-ms': { type: 'string', default: '100' },
    'first-token-ms': { type: 'string', default: '150' },
    'first-audio-ms': { type: 'string', default: '100' },
    'backends-cpu': { type: 'string' },
    'server-cpu': { type: 'string', default: '0' },
    'loadgen-cpu': { type: 'string', default: '1' },
    'no-pin': { type: 'boolean', default: false },
    'setup-concurrency': { type: 'string', default: '8' },
    env: { type: 'string', multiple: true, default: [] },
    'server-node-arg': { type: 'string', multiple: true, default: [] },
    'keep-going': { type: 'boolean', default: false },
    json: { type: 'string' },
    'server-output': { type: 'string' },
  },
});

const ramp = values.ramp.split(',').map(Number);
if (!ramp.every((n) => Number.isInteger(n) && n > 0)) throw new Error('--ramp is a comma-separated list of call counts');
const windowSeconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const ptimeMs = Number(values.ptime);
const setupConcurrency = Math.max(1, Number(values['setup-concurrency']));
const model = values.model;
/** Any model but audio-echo talks back: its calls ask questions and time the answers. */
const talking = model !== 'audio-echo';
/** Agent calls with their models behind stand-in backends in another process. */
const remote = model === 'remote';
const latencies: RemoteLatencies = { transcriptionMs: Number(values['transcription-ms']), firstTokenMs: Number(values['first-token-ms']), firstAudioMs: Number(values['first-audio-ms']) };
const askEveryMs = 1000 * Number(values['ask-every'] ?? (remote ? 10 : 0));
/** What an agent costing nothing would reach (remote calls), ms; set in main(). */
let idealMs = 0;

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
}

// ───────────────────────────── a step of the ramp ─────────────────────────────

interface StepRow {
  n: number;
  connected: number;
  setupFailures: number;
  setupRetries: number;
  setupMsP50: number;
  seconds: number;
  lossPctMax: number;
  deliveredPctMin: number;
  sendPctMin: number;
  latePct: number;
  jitterMsP95: number;
  jitterMsMax: number;
  /** Echo delay (audio-echo) or voice-to-voice (talking calls). */
  delayMsP50: number;
  delayMsP95: number;
  delays: number;
  /** Remote models: voice-to-voice minus idealMs. */
  addedMsP50: number;
  addedMsP95: number;
  unanswered: number;
  serverCpuPct: number;
  serverCpuPerCallPct: number;
  serverRssMb: number;
  /** RSS growth per call since the previous step (or since before the first call). */
  rssPerCallMb: number;
  loadgenCpuPct: number;
  loadgenCpuPerCallPct: number;
  otherCpuPct: number;
  /** Time the server's threads were runnable but waited for a CPU, in % of the window (summed over threads). */
  serverWaitPct: number;
  loadAtStart: string;
  pass: boolean;
  why: string;
}

type ProbeFactory = () => Probe;

async function openCalls(server: RunningServer, newProbe: ProbeFactory, pacer: Pacer, target: number, failures: { count: number; retries: number }): Promise<void> {
  const open = async () => {
    for (let attempt = 1; ; attempt++) {
      const probe = newProbe();
      try {
        const call = await LoadCall.open({
          baseUrl: server.baseUrl,
          apiKey: server.devKey,
          source: probe,
          // The Orga clients' params (audio only: the load generator sends no video).
          params: { model: remote ? 'orga-1-beta' : model, temperature: 0.8, return_transcription: false, instructions: null, modalities: ['audio'], history: false },
          onAudio: (rtp: AgentAudio, now: number) => probe.heard(rtp.payload, now),
        });
        pacer.add(call, probe);
        return;
      } catch (err) {
        // libdatachannel now and then rejects a good answer under load ("Got a remote candidate
        // without ICE transport"); a real client would retry the call, so does this one.
        if (attempt >= SETUP_ATTEMPTS) {
          failures.count++;
          log(`  call setup failed: ${(err as Error).message}`);
          return;
        }
        failures.retries++;
        log(`  call setup retried: ${(err as Error).message}`);
      }
    }
  };
  const missing = target - pacer.calls.length;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(setupConcurrency, missing) }, async () => {
      while (next++ < missing) await open();
    }),
  );
}

async function runStep(server: RunningServer, newProbe: ProbeFactory, pacer: Pacer, n: number, rssBefore: { mb: number; calls: number }): Promise<StepRow> {
  const loadAtStart = loadAverage();
  const failures = { count: 0, retries: 0 };
  const before = pacer.calls.length;
  await openCalls(server, newProbe, pacer, n, failures);
  const setupMs = pacer.calls.slice(before).map((p) => p.call.marks.sessionCreated - p.call.marks.start);
  await sleep(warmupSeconds * 1000);

  const serverPid = server.proc.pid!;
  const calls = pacer.calls.map((p) => p.call);
  const t0 = performance.now();
  const rx0 = calls.map((c) => c.audioIn.snapshot(t0));
  const sent0 = calls.map((c) => c.packetsSent);
  for (const p of pacer.calls) p.probe.take();
  const cpu0 = { server: treeCpuSeconds(serverPid), loadgen: cpuSeconds(process.pid), machine: machineJiffies(), waited: treeRunDelaySeconds(serverPid) };
  const jitterSamples: number[] = [];
  const late0 = pacer.late;
  const unansweredBefore = pacer.calls.reduce((a, p) => a + (p.probe.unanswered?.() ?? 0), 0);
  const windowEnd = t0 + windowSeconds * 1000;
  while (performance.now() < windowEnd) {
    await sleep(Math.min(1000, windowEnd - performance.now()));
    for (const c of calls) jitterSamples.push(c.audioIn.jitterMs);
  }
  const t1 = performance.now();
  const cpu1 = { server: treeCpuSeconds(serverPid), loadgen: cpuSeconds(process.pid), machine: machineJiffies(), waited: treeRunDelaySeconds(serverPid) };
  const wall = (t1 - t0) / 1000;
  const delays = pacer.calls.flatMap((p) => p.probe.take());
  const added = delays.map((d) => d - idealMs);
  const unanswered = pacer.calls.reduce((a, p) => a + (p.probe.unanswered?.() ?? 0), 0) - unansweredBefore;

  const perCall = calls.map((c, i) => {
    const w = between(rx0[i] as ReceiveSnapshot, c.audioIn.snapshot(t1));
    return {
      lossPct: w.expected > 0 ? (100 * w.lost) / w.expected : talking ? 0 : 100,
      deliveredPct: (100 * w.received) / (wall * ECHO_PACKETS_PER_SECOND),
      sendPct: (100 * (c.packetsSent - sent0[i]!)) / ((wall * 1000) / ptimeMs),
    };
  });
  const serverPct = (100 * (cpu1.server - cpu0.server)) / wall;
  const loadgenPct = (100 * (cpu1.loadgen - cpu0.loadgen)) / wall;
  const machinePct = (100 * cpus().length * (cpu1.machine.busy - cpu0.machine.busy)) / (cpu1.machine.total - cpu0.machine.total);
  const lossPctMax = Math.max(0, ...perCall.map((c) => c.lossPct));
  const deliveredPctMin = Math.min(...perCall.map((c) => c.deliveredPct));
  const sendPctMin = Math.min(...perCall.map((c) => c.sendPct));
  const jitterMsP95 = percentile(jitterSamples, 95);
  const sentInWindow = calls.reduce((a, c, i) => a + c.packetsSent - sent0[i]!, 0);
  const latePct = (100 * (pacer.late - late0)) / Math.max(1, sentInWindow);
  const delayP50 = percentile(delays, 50);
  const addedP95 = percentile(added, 95);
  const serverRssMb = processTree(serverPid).reduce((sum, pid) => sum + rssMb(pid), 0);
  const problems = [
    calls.length < n ? `${n - calls.length} calls did not connect` : '',
    lossPctMax >= LOSS_LIMIT_PCT ? `loss ${lossPctMax.toFixed(2)} %` : '',
    // An echo comes back at 50 packets a second; an agent talks only when it answers.
    !talking && deliveredPctMin <= 100 - LOSS_LIMIT_PCT ? `echo delivered ${deliveredPctMin.toFixed(1)} %` : '',
    !(jitterMsP95 < JITTER_P95_LIMIT_MS) ? `jitter p95 ${jitterMsP95.toFixed(1)} ms` : '',
    talking && !remote && !(delayP50 < VOICE_TO_VOICE_P50_LIMIT_MS) ? `voice-to-voice p50 ${Math.round(delayP50)} ms` : '',
    remote && lossPctMax > 0 ? 'audio lost' : '',
    remote && unanswered > 0 ? `${unanswered} questions unanswered` : '',
    remote && askEveryMs > 0 && !values['listen-only'] && !(addedP95 < ADDED_P95_LIMIT_MS) ? `added latency p95 ${Math.round(addedP95)} ms` : '',
  ].filter(Boolean);
  // Not the server's fault, but it disturbs what is measured (a late question, a late burst).
  const disturbed = sendPctMin < SEND_MIN_PCT || latePct > 100 - SEND_MIN_PCT ? `load generator behind: sent ${sendPctMin.toFixed(1)} %, ${latePct.toFixed(1)} % late` : '';
  const r = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
  return {
    n,
    connected: calls.length,
    setupFailures: failures.count,
    setupRetries: failures.retries,
    setupMsP50: r(percentile(setupMs, 50), 0),
    seconds: r(wall),
    lossPctMax: r(lossPctMax, 2),
    deliveredPctMin: r(deliveredPctMin),
    sendPctMin: r(sendPctMin),
    latePct: r(latePct, 2),
    jitterMsP95: r(jitterMsP95),
    jitterMsMax: r(Math.max(...jitterSamples)),
    delayMsP50: r(delayP50, 0),
    delayMsP95: r(percentile(delays, 95), 0),
    delays: delays.length,
    addedMsP50: r(percentile(added, 50), 0),
    addedMsP95: r(addedP95, 0),
    unanswered,
    serverCpuPct: r(serverPct),
    serverCpuPerCallPct: r(serverPct / calls.length, 2),
    serverRssMb,
    rssPerCallMb: r((serverRssMb - rssBefore.mb) / Math.max(1, calls.length - rssBefore.calls), 2),
    loadgenCpuPct: r(loadgenPct),
    loadgenCpuPerCallPct: r(loadgenPct / calls.length, 2),
    otherCpuPct: r(machinePct - serverPct - loadgenPct),
    serverWaitPct: r((100 * (cpu1.waited - cpu0.waited)) / wall),
    loadAtStart,
    pass: problems.length === 0,
    why: [...problems, disturbed].filter(Boolean).join(', ') || 'ok',
  };
}

// ───────────────────────────── the run ─────────────────────────────

/** "p50 / p95", or a dash when nothing was timed (listening calls). */
function pair(a: number, b: number): string {
  return Number.isFinite(a) ? `${a} / ${b}` : '—';
}

function table(rows: StepRow[]): string {
  const head = [
    'calls', 'connected', 'setup p50 ms', 'loss % (worst call)', talking ? 'answers timed' : 'echo delivered % (worst call)', 'jitter p95 / max ms',
    talking ? 'voice-to-voice p50 / p95 ms' : 'echo delay p50 / p95 ms', ...(remote ? ['Parley-added p50 / p95 ms'] : []), 'server CPU % of a core', 'server CPU per call %',
    'server RSS MB', 'RSS per added call MB', 'load generator CPU %',
    'load generator per call %', 'other CPU %', 'server waited for a CPU %', 'load average at start', `${windowSeconds} s result`,
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const s of rows) {
    lines.push(
      `| ${[
        s.n, s.connected + (s.setupRetries ? ` (${s.setupRetries} retried)` : ''), s.setupMsP50, s.lossPctMax, talking ? s.delays : s.deliveredPctMin,
        `${s.jitterMsP95} / ${s.jitterMsMax}`, pair(s.delayMsP50, s.delayMsP95), ...(remote ? [pair(s.addedMsP50, s.addedMsP95)] : []), s.serverCpuPct,
        s.serverCpuPerCallPct, s.serverRssMb, s.rssPerCallMb, s.loadgenCpuPct,
        s.loadgenCpuPerCallPct, s.otherCpuPct, s.serverWaitPct, s.loadAtStart, `${s.pass ? 'pass' : 'fail'}${s.why === 'ok' ? '' : `: ${s.why}`}`,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** The least-squares slope of the server's RSS against the calls connected, over every step. */
function rssSlopeMbPerCall(rows: StepRow[]): number {
  if (rows.length < 2) return Number.NaN;
  const mx = rows.reduce((a, r) => a + r.connected, 0) / rows.length;
  const my = rows.reduce((a, r) => a + r.serverRssMb, 0) / rows.length;
  const sxy = rows.reduce((a, r) => a + (r.connected - mx) * (r.serverRssMb - my), 0);
  const sxx = rows.reduce((a, r) => a + (r.connected - mx) ** 2, 0);
  return sxx > 0 ? sxy / sxx : Number.NaN;
}

/** Echo calls play the marker clip and time its echo; talking calls ask a question in turn. */
function probeFactory(question: Question | undefined): ProbeFactory {
  if (!talking) {
    const clip = buildClip(ptimeMs);
    return () => {
      const onsets = new OnsetMatcher();
      const player = new ClipPlayer(clip, onsets);
      return {
        ptimeMs,
        next: (now) => player.next(now),
        heard: (payload, now) => onsets.received(payload.length, now),
        take: () => onsets.take(),
      };
    };
  }
  let calls = 0;
  return () => {
    // Callers start their first question at spread times, so their turns do not line up.
    const startAt = values['listen-only'] ? Number.POSITIVE_INFINITY : performance.now() + 1000 + (askEveryMs > 0 ? Math.random() * askEveryMs : 700 * (calls++ % 7));
    const script = new TalkScript(question!, startAt, askEveryMs);
    return {
      ptimeMs,
      next: (now) => script.next(now),
      heard: (payload, now) => script.heard(payload, now),
      take: () => script.take(),
      unanswered: () => script.unanswered,
    };
  };
}

async function main(): Promise<void> {
  const env: Record<string, string> = { WEBRTC_STACK: values.stack, MAX_CONCURRENT_CALLS: '10000', LOG_LEVEL: 'warn', STUN_ENABLED: 'false', ...NO_RATE_LIMITS, ...NO_CALL_LIMITS };
  for (const kv of values.env) {
    const eq = kv.indexOf('=');
    if (eq < 1) throw new Error(`--env wants KEY=VALUE, got ${kv}`);
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const question = talking ? buildQuestion(values.question, ptimeMs) : undefined;
  const backends = remote ? await startBackendsProcess(latencies, values['no-pin'] ? undefined : (values['backends-cpu'] ?? values['loadgen-cpu'])) : undefined;
  process.on('exit', () => backends?.proc.exitCode === null && backends.proc.kill('SIGKILL'));
  if (backends) {
    for (const key of ['STT_URL', 'LLM_BASE_URL', 'TTS_URL']) env[key] ??= backends.baseUrl;
    const ideal = await idealVoiceToVoiceMs(question!.pcm, question!.speechMs, env, latencies);
    idealMs = ideal.idealMs;
    log(
      `remote models at ${backends.baseUrl} (transcription ${latencies.transcriptionMs} ms, first token ${latencies.firstTokenMs} ms, first audio ${latencies.firstAudioMs} ms); ` +
        `an agent costing nothing answers ${Math.round(idealMs)} ms after the question's last loud sample (turn ends after ${Math.round(ideal.turnEndMs)} ms, reply prepared at a ${ideal.pauseMs ?? 'no'} ms pause)`,
    );
  }
  const newProbe = probeFactory(question);
  const server = await startServer(env, values['server-node-arg']);
  // However the run ends (an error, Ctrl-C), the server it started goes with it.
  process.on('exit', () => server.proc.exitCode === null && server.proc.kill('SIGKILL'));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  if (!values['no-pin']) {
    for (const pid of processTree(server.proc.pid!)) pin(pid, values['server-cpu']);
    pin(process.pid, values['loadgen-cpu']);
  }
  const settings = Object.entries(env).filter(([k]) => !['MAX_CONCURRENT_CALLS', 'LOG_LEVEL', 'STUN_ENABLED'].includes(k)).map(([k, v]) => `${k}=${v}`).join(' ');
  log(
    `loadgen: ${model} calls, ptime ${ptimeMs} ms, ramp ${ramp.join(',')}, ${windowSeconds} s windows; server ${settings}; ` +
      (values['no-pin'] ? 'unpinned' : `server on CPU ${values['server-cpu']}, load generator on CPU ${values['loadgen-cpu']}`) +
      `; load average ${loadAverage()}`,
  );
  const pacer = new Pacer();
  const rows: StepRow[] = [];
  let rssBefore = { mb: processTree(server.proc.pid!).reduce((sum, pid) => sum + rssMb(pid), 0), calls: 0 };
  const started = new Date();
  try {
    for (const n of ramp) {
      log(`${n} calls…`);
      const row = await runStep(server, newProbe, pacer, n, rssBefore);
      rssBefore = { mb: row.serverRssMb, calls: row.connected };
      rows.push(row);
      log(`  ${row.pass ? 'PASS' : 'FAIL'} ${JSON.stringify(row)}`);
      if (!row.pass && !values['keep-going']) break;
    }
  } finally {
    pacer.stop();
    for (const p of pacer.calls) p.call.close();
    await sleep(500);
    await server.stop('SIGTERM');
    if (backends) log(`model backends answered ${JSON.stringify(await backends.stop())}`);
    if (values['server-output']) writeFileSync(values['server-output'], server.stdout() + server.stderr());
  }
  const passing = rows.filter((r) => r.pass).map((r) => r.n);
  const slope = rssSlopeMbPerCall(rows);
  const out = [
    table(rows),
    '',
    ...(Number.isFinite(slope) ? [`Server RSS over the steps: ${slope.toFixed(2)} MB per call (least-squares slope of RSS against connected calls).`] : []),
    `Largest passing step: ${passing.length ? Math.max(...passing) : 'none'} ${model} calls${remote ? (values['listen-only'] ? ', listening' : `, asking every ${askEveryMs / 1000} s`) : ''} (server ${settings}; ptime ${ptimeMs} ms; ${started.toISOString()}; load average at the end ${loadAverage()}).`,
  ].join('\n');
  process.stdout.write(`${out}\n`);
  if (values.json) writeFileSync(values.json, JSON.stringify({ date: started.toISOString(), options: values, rows }, null, 2));
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
