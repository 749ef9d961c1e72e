// What traces cost (issue 47): the server's CPU per talking call, and voice-to-voice, with traces
// exported (OTLP/HTTP to a receiver in this process) against traces off, the same calls otherwise.
// The calls speak to the cascade (LLM_BASE_URL, STT_URL, TTS_URL) whose services are the stand-ins
// of bench/lib/modelBackendsMain.ts in a process of their own, so the server's CPU is the call path
// and what Parley does around the models — every span of it (call, turns and their stages, the
// requests) is made. Rounds alternate off and on, each on a fresh server, so the machine's drift
// spreads over both; each row says how busy the rest of the machine was meanwhile. On a busy shared
// machine that difference is below the noise, so the script also measures the spans' own cost: the
// CPU time this process spends making a call's spans through the same code (startCallTrace, the turn
// stages, upstream spans) and exporting them with the SDK's batch processor and OTLP/HTTP exporter
// to a sink that reads nothing — CPU time, which another process's load barely moves — and turns it
// into a share of a core per talking call at the rate the calls above had turns.
//
//   node --import tsx bench/traces.ts [--calls 4] [--turns 6] [--rounds 2] [--env KEY=VALUE ...]
//   node --import tsx bench/traces.ts --rounds 0     # only the spans' own cost
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/env.ts';
import { TURN_STAGES, startCallTrace } from '../src/observability/callTrace.ts';
import { startTracing, upstreamSpan } from '../src/observability/tracing.ts';
import { startOtlpReceiver } from '../test/helpers/otlpReceiver.ts';
import { NO_CALL_LIMITS, startServer } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { cpuSeconds, machineJiffies, treeCpuSeconds } from './lib/proc.ts';
import { startBackendsProcess } from './lib/remoteModels.ts';
import { mean, openTalker, percentile } from './lib/talker.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '4' },
    turns: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '2' },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const calls = Number(values.calls);
const turns = Number(values.turns);
const rounds = Number(values.rounds);
const extraEnv = Object.fromEntries(values.env!.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const TICKS = 100;

const latencies = { transcriptionMs: 100, firstTokenMs: 150, firstAudioMs: 100 };
const backends = await startBackendsProcess(latencies, undefined);
const receiver = await startOtlpReceiver();
const question = speak('what time is it');

interface Phase {
  mode: 'off' | 'on';
  seconds: number;
  cpuPctPerCall: number;
  serverCores: number;
  otherCores: number;
  clientV2v: number[];
  serverV2v: number[];
  spans: number;
  exports: number;
}

async function phase(mode: 'off' | 'on'): Promise<Phase> {
  const server = await startServer({
    LOG_LEVEL: 'warn',
    MAX_CONCURRENT_CALLS: '100',
    ...NO_CALL_LIMITS,
    STT_URL: backends.baseUrl,
    LLM_BASE_URL: backends.baseUrl,
    TTS_URL: backends.baseUrl,
    ...(mode === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } : { OTEL_TRACES_EXPORTER: 'none' }),
    ...extraEnv,
  });
  try {
    const talkers = await Promise.all(Array.from({ length: calls }, () => openTalker(server, 'orga-1-beta')));
    const pid = server.proc.pid!;
    const cpu0 = { server: treeCpuSeconds(pid), ours: cpuSeconds(process.pid) + cpuSeconds(backends.proc.pid!), machine: machineJiffies(), at: performance.now() };
    const results = await Promise.all(
      talkers.map(async (t, i) => {
        await sleep(i * 250); // the callers do not all speak at once
        const out = [];
        for (let k = 0; k < turns; k++) out.push(await t.turn(question));
        return out;
      }),
    );
    const seconds = (performance.now() - cpu0.at) / 1000;
    const serverCores = (treeCpuSeconds(pid) - cpu0.server) / seconds;
    const ours = (cpuSeconds(process.pid) + cpuSeconds(backends.proc.pid!) - cpu0.ours) / seconds;
    const machine = machineJiffies();
    const machineCores = (machine.busy - cpu0.machine.busy) / TICKS / seconds;
    for (const t of talkers) t.close();
    const turnsDone = results.flat().filter((r) => r !== undefined);
    return {
      mode,
      seconds,
      cpuPctPerCall: (100 * serverCores) / calls,
      serverCores,
      otherCores: Math.max(0, machineCores - serverCores - ours),
      clientV2v: turnsDone.map((r) => r!.voiceToVoiceMs),
      serverV2v: turnsDone.map((r) => r!.timings.voice_to_voice_ms).filter((v): v is number => v !== undefined),
      spans: 0,
      exports: 0,
    };
  } finally {
    // SIGTERM exports what the node still holds: every span of the phase has arrived once it exited.
    await server.stop('SIGTERM');
  }
}

const phases: Phase[] = [];
try {
  for (let r = 0; r < rounds; r++) {
    for (const mode of r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      const spansBefore = receiver.spans.length;
      const exportsBefore = receiver.requests.length;
      const p = await phase(mode);
      p.spans = receiver.spans.length - spansBefore;
      p.exports = receiver.requests.length - exportsBefore;
      phases.push(p);
      await sleep(1000);
    }
  }
} finally {
  await backends.stop();
  await receiver.close();
}

const f = (xs: number[], p: number) => (xs.length ? Math.round(percentile(xs, p)) : NaN);
const cpuOff = mean(phases.filter((p) => p.mode === 'off').map((p) => p.cpuPctPerCall));
if (phases.length) {
  console.log(`${calls} talking calls × ${turns} turns, cascade with stand-in models (${latencies.transcriptionMs}/${latencies.firstTokenMs}/${latencies.firstAudioMs} ms), ${rounds} rounds\n`);
  console.log('| round | traces | server CPU per talking call (% of a core) | server CPU (cores) | other load (cores) | turns | v2v at the caller p50 / p95 ms | server voice_to_voice_ms p50 / p95 | spans exported (exports) |');
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|');
  phases.forEach((p, i) => {
    console.log(
      `| ${Math.floor(i / 2) + 1} | ${p.mode} | ${p.cpuPctPerCall.toFixed(2)} | ${p.serverCores.toFixed(3)} | ${p.otherCores.toFixed(2)} | ${p.clientV2v.length}/${calls * turns} | ` +
        `${f(p.clientV2v, 50)} / ${f(p.clientV2v, 95)} | ${f(p.serverV2v, 50)} / ${f(p.serverV2v, 95)} | ${p.spans} (${p.exports}) |`,
    );
  });
  const of = (mode: 'off' | 'on') => phases.filter((p) => p.mode === mode);
  const off = of('off');
  const on = of('on');
  const cpuOn = mean(on.map((p) => p.cpuPctPerCall));
  const all = (ps: Phase[], key: 'clientV2v' | 'serverV2v') => ps.flatMap((p) => p[key]);
  console.log(
    `\nmean over the rounds: CPU per talking call ${cpuOff.toFixed(2)} % off, ${cpuOn.toFixed(2)} % on (${(((cpuOn - cpuOff) / cpuOff) * 100).toFixed(1)} %); ` +
      `voice-to-voice at the caller p50 ${f(all(off, 'clientV2v'), 50)} ms off, ${f(all(on, 'clientV2v'), 50)} ms on; ` +
      `server voice_to_voice_ms p50 ${f(all(off, 'serverV2v'), 50)} ms off, ${f(all(on, 'serverV2v'), 50)} ms on; ` +
      `${on.length ? Math.round(mean(on.map((p) => p.spans / Math.max(1, p.clientV2v.length)))) : 0} spans a turn exported`,
  );
}

/**
 * The CPU time (µs, this process) of one turn's spans — the turn, its five stages, the requests of a
 * turn with a reply of two clauses (recognition, model, two syntheses) — and its share of the call's
 * span, made and exported as a node does, over `callsMade` calls of `turnsEach` turns.
 */
async function spanCostUs(callsMade: number, turnsEach: number): Promise<{ perTurnUs: number; spans: number; bytes: number }> {
  const bodies: Buffer[] = [];
  let spans = 0;
  const sink = createServer((req, res) => {
    req.on('data', (d: Buffer) => bodies.push(d));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  // The exporter reads its endpoint from the environment, as in a node.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const config = loadConfig({ DATA_DIR: '/nonexistent', OTEL_EXPORTER_OTLP_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_ENDPOINT });
  const tracing = startTracing(config, { warn: () => {} }, { nodeId: 'bench', version: '0' });
  const url = 'http://127.0.0.1:1/v1';
  const cpu0 = process.cpuUsage();
  for (let c = 0; c < callsMade; c++) {
    const call = startCallTrace(tracing.root, { 'parley.conversation.id': `conv_${c}`, 'parley.call.door': 'webrtc', 'parley.call.protocol': 'orga', 'parley.call.model': 'orga-1-beta', 'parley.api_key.id': 'key_bench' });
    spans++;
    for (let k = 0; k < turnsEach; k++) {
      const t0 = performance.now() - 1000;
      const turn = call.turn(`item_${k}`, t0)!;
      turn.set({ 'parley.response.id': `resp_${k}` });
      const requests = [upstreamSpan(turn.parent, 'stt', `${url}/audio/transcriptions`, 'whisper-1'), upstreamSpan(turn.parent, 'llm', `${url}/chat/completions`, 'gpt-4o-mini'), upstreamSpan(turn.parent, 'tts', `${url}/audio/speech`, 'tts-1'), upstreamSpan(turn.parent, 'tts', `${url}/audio/speech`, 'tts-1')];
      for (const r of requests) {
        r.set({ 'http.response.status_code': 200 });
        r.end();
      }
      TURN_STAGES.forEach((stage, i) => turn.reached(stage, t0 + 300 + i * 100));
      turn.set({ 'parley.turn.voice_to_voice_ms': 700 });
      turn.end();
      spans += 1 + TURN_STAGES.length + requests.length;
    }
    call.end(false, { 'parley.call.state': 'ended', 'parley.call.end_reason': 'hangup', 'parley.call.caller_audio_s': 30, 'parley.call.agent_audio_s': 12, 'parley.call.input_tokens': 400, 'parley.call.output_tokens': 80 });
    // Spread out as a node makes them: the batch processor's queue (2048 spans) is exported as it
    // fills, and never overflows (a span dropped would be a span not paid for).
    if (c % 5 === 4) await sleep(5);
  }
  await tracing.shutdown();
  const used = process.cpuUsage(cpu0);
  sink.closeAllConnections();
  sink.close();
  const body = Buffer.concat(bodies).toString('utf8');
  const received = body.split('"spanId"').length - 1;
  if (received !== spans) throw new Error(`${spans} spans made, ${received} received: the measure is wrong`);
  return { perTurnUs: (used.user + used.system) / (callsMade * turnsEach), spans, bytes: body.length };
}

const cost = await spanCostUs(500, turns);
console.log(
  `\nthe spans' own cost: ${cost.perTurnUs.toFixed(0)} µs of CPU a turn (its ${1 + TURN_STAGES.length + 4} spans and its share of the call's, made and exported over OTLP/HTTP; ` +
    `${cost.spans} spans, ${(cost.bytes / cost.spans).toFixed(0)} bytes of JSON a span)`,
);
if (phases.length) {
  const turnsPerCallSecond = mean(phases.map((p) => p.clientV2v.length / calls / p.seconds));
  const overheadPct = (cost.perTurnUs / 1e6) * turnsPerCallSecond * 100;
  console.log(
    `at the ${turnsPerCallSecond.toFixed(3)} turns a second a call had above, that is ${overheadPct.toFixed(3)} % of a core per talking call: ` +
      `${((overheadPct / cpuOff) * 100).toFixed(2)} % of the ${cpuOff.toFixed(2)} % a call costs with traces off`,
  );
}
