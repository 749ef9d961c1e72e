// Placement by load (issue 38): a node ramped past its capacity with agent calls whose models run
// elsewhere (stand-in STT, LLM and TTS on loopback, bench/lib/remoteModels.ts; the load generator's
// calls of bench/loadgen.ts --model remote, each asking a question every --ask-every seconds).
//   without   one node, LOAD_THRESHOLD=0: it takes every call offered
//   with      one node, LOAD_THRESHOLD=--threshold (0.75): above it the node refuses new calls (503)
//   two       two nodes sharing PostgreSQL, both at --threshold, ramped to --two-ramp (twice the
//             one-node ramp): calls are offered to them in turn, as a load balancer would, and a
//             loaded or full node passes its offer to the other
// At each step the calls offered so far (cumulative) are set up (refused ones are not retried), then,
// after --warmup seconds, a --seconds window is measured on the calls the node(s) carry: Parley-added
// latency = voice-to-voice minus what an agent costing nothing would take with the same turn rule and
// backends (as in bench/loadgen.ts). Target: p95 < 150 ms at every step.
// Pinning (taskset): a node on CPU 0 (the second node on CPU 1), the load generator and the backends
// on CPU 1. The load figure counts the machine's cores (src/observability/nodeLoad.ts): whatever else
// runs on the machine counts too, and two nodes on one machine see the same machine.
//
//   node --import tsx bench/placement-ramp.ts                                  # all three, ≈ 8 min
//   node --import tsx bench/placement-ramp.ts --runs with --ramp 20,40,60 --seconds 10
//   flags: --runs without,with,two  --ramp 20,40,60,80,100,120  --two-ramp (the ramp doubled)
//          --seconds 15  --warmup 5  --ask-every 10  --threshold 0.75  --json FILE
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { scratchDatabase } from '../test/helpers/postgres.ts';
import { clusterEnv, metric, startServer, NO_CALL_LIMITS, NO_RATE_LIMITS, type RunningServer } from '../test/helpers/server.ts';
import { CallRefused, LoadCall, type AgentAudio } from './lib/loadCall.ts';
import { Pacer, type Probe } from './lib/pacer.ts';
import { loadAverage, machineJiffies, percentile, pin, processTree, treeCpuSeconds } from './lib/proc.ts';
import { idealVoiceToVoiceMs, startBackendsProcess, type RemoteLatencies } from './lib/remoteModels.ts';
import { buildQuestion, TalkScript } from './lib/talkScript.ts';

const ADDED_P95_TARGET_MS = 150;
const SETUP_ATTEMPTS = 3;
const SETUP_CONCURRENCY = 8;
const PTIME_MS = 20;

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: 'without,with,two' },
    ramp: { type: 'string', default: '20,40,60,80,100,120' },
    'two-ramp': { type: 'string' },
    seconds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '5' },
    'ask-every': { type: 'string', default: '10' },
    threshold: { type: 'string', default: '0.75' },
    json: { type: 'string' },
  },
});
const ramp = values.ramp.split(',').map(Number);
const twoRamp = values['two-ramp'] ? values['two-ramp'].split(',').map(Number) : ramp.map((n) => 2 * n);
const windowMs = 1000 * Number(values.seconds);
const warmupMs = 1000 * Number(values.warmup);
const askEveryMs = 1000 * Number(values['ask-every']);
const latencies: RemoteLatencies = { transcriptionMs: 100, firstTokenMs: 150, firstAudioMs: 100 };

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
}

interface Node {
  id: string;
  server: RunningServer;
}

interface Carried {
  call: LoadCall;
  probe: Probe;
  node: string;
}

interface Row {
  run: string;
  offered: number;
  carried: Record<string, number>;
  refused: number;
  placedElsewhere: number;
  setupFailures: number;
  answers: number;
  unanswered: number;
  addedMsP50: number;
  addedMsP95: number;
  addedMsP95ByNode: Record<string, number>;
  load: Record<string, number>;
  cpuPct: Record<string, number>;
  /** The machine's cores' busy share in the window (what the load figure counts), %. */
  machinePct: number;
  loadAverage: string;
}

/** A caller asking the question every --ask-every seconds, its first at a random moment. */
function talker(question: ReturnType<typeof buildQuestion>): Probe {
  const script = new TalkScript(question, performance.now() + 1000 + Math.random() * askEveryMs, askEveryMs);
  return { ptimeMs: PTIME_MS, next: (now) => script.next(now), heard: (p, now) => script.heard(p, now), take: () => script.take(), unanswered: () => script.unanswered };
}

async function ramped(run: string, nodes: Node[], steps: number[], question: ReturnType<typeof buildQuestion>, idealMs: number): Promise<Row[]> {
  const pacer = new Pacer();
  const carried: Carried[] = [];
  const rows: Row[] = [];
  let offered = 0;
  try {
    for (const target of steps) {
      log(`${run}: ${target} calls offered…`);
      const step = { refused: 0, placedElsewhere: 0, setupFailures: 0 };
      const offer = async (asked: Node) => {
        for (let attempt = 1; ; attempt++) {
          const probe = talker(question);
          try {
            const call = await LoadCall.open({
              baseUrl: asked.server.baseUrl,
              apiKey: nodes[0]!.server.devKey,
              source: probe,
              params: { model: 'orga-1-beta', temperature: 0.8, return_transcription: false, instructions: null, modalities: ['audio'], history: false },
              onAudio: (rtp: AgentAudio, now: number) => probe.heard(rtp.payload, now),
            });
            const node = call.answeredBy ?? asked.id;
            if (node !== asked.id) step.placedElsewhere++;
            carried.push({ call, probe, node });
            pacer.add(call, probe);
            return;
          } catch (err) {
            if (err instanceof CallRefused) return void step.refused++;
            // libdatachannel now and then rejects a good answer under load; a real client retries.
            if (attempt >= SETUP_ATTEMPTS) return void step.setupFailures++;
          }
        }
      };
      const queue = Array.from({ length: target - offered }, (_, i) => nodes[(offered + i) % nodes.length]!);
      offered = target;
      await Promise.all(Array.from({ length: SETUP_CONCURRENCY }, async () => {
        for (let asked = queue.shift(); asked; asked = queue.shift()) await offer(asked);
      }));
      await sleep(warmupMs);
      for (const c of carried) c.probe.take();
      const unansweredBefore = carried.reduce((a, c) => a + (c.probe.unanswered?.() ?? 0), 0);
      const cpu0 = nodes.map((n) => treeCpuSeconds(n.server.proc.pid!));
      const machine0 = machineJiffies();
      const t0 = performance.now();
      await sleep(windowMs);
      const wall = (performance.now() - t0) / 1000;
      const machine1 = machineJiffies();
      const cpuPct = Object.fromEntries(nodes.map((n, i) => [n.id, Math.round((100 * (treeCpuSeconds(n.server.proc.pid!) - cpu0[i]!)) / wall)]));
      const added = carried.map((c) => ({ node: c.node, ms: c.probe.take().map((d) => d - idealMs) }));
      const all = added.flatMap((a) => a.ms);
      const load = Object.fromEntries(await Promise.all(nodes.map(async (n) => [n.id, Math.round(100 * (await metric(n.server.baseUrl, 'parley_node_load'))) / 100] as const)));
      const row: Row = {
        run,
        offered,
        carried: Object.fromEntries(nodes.map((n) => [n.id, carried.filter((c) => c.node === n.id).length])),
        ...step,
        answers: all.length,
        unanswered: carried.reduce((a, c) => a + (c.probe.unanswered?.() ?? 0), 0) - unansweredBefore,
        addedMsP50: Math.round(percentile(all, 50)),
        addedMsP95: Math.round(percentile(all, 95)),
        addedMsP95ByNode: Object.fromEntries(nodes.map((n) => [n.id, Math.round(percentile(added.filter((a) => a.node === n.id).flatMap((a) => a.ms), 95))])),
        load,
        cpuPct,
        machinePct: Math.round((100 * (machine1.busy - machine0.busy)) / (machine1.total - machine0.total)),
        loadAverage: loadAverage(),
      };
      rows.push(row);
      log(`  ${JSON.stringify(row)}`);
    }
  } finally {
    pacer.stop();
    for (const c of carried) c.call.close();
    await sleep(500);
  }
  return rows;
}

function table(rows: Row[]): string {
  const nodes = Object.keys(rows[0]!.carried);
  const two = nodes.length > 1;
  const head = ['calls offered', 'carried' + (two ? ' (A + B)' : ''), 'refused (step)', ...(two ? ['placed on the other node (step)'] : []), 'answers timed', 'unanswered', 'Parley-added p50 / p95 ms', ...(two ? ['p95 A / B ms'] : []), 'load' + (two ? ' A / B' : ''), 'server CPU %' + (two ? ' A / B' : ''), 'machine busy %', `p95 < ${ADDED_P95_TARGET_MS} ms`];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---:').join('|')}|`];
  for (const r of rows) {
    const per = (o: Record<string, number>) => nodes.map((n) => (Number.isFinite(o[n]) ? o[n] : '—')).join(' / ');
    lines.push(`| ${[
      r.offered, two ? `${nodes.reduce((a, n) => a + r.carried[n]!, 0)} (${nodes.map((n) => r.carried[n]).join(' + ')})` : r.carried[nodes[0]!], r.refused + (r.setupFailures ? ` (+${r.setupFailures} failed)` : ''),
      ...(two ? [r.placedElsewhere] : []), r.answers, r.unanswered, Number.isFinite(r.addedMsP95) ? `${r.addedMsP50} / ${r.addedMsP95}` : '—', ...(two ? [per(r.addedMsP95ByNode)] : []), per(r.load), per(r.cpuPct), r.machinePct,
      r.addedMsP95 < ADDED_P95_TARGET_MS ? 'yes' : 'no',
    ].join(' | ')} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const runs = values.runs.split(',');
  const question = buildQuestion('What time is it?', PTIME_MS);
  const backends = await startBackendsProcess(latencies, '1');
  process.on('exit', () => backends.proc.exitCode === null && backends.proc.kill('SIGKILL'));
  const env: Record<string, string> = {
    MAX_CONCURRENT_CALLS: '10000', LOG_LEVEL: 'warn', STUN_ENABLED: 'false', ...NO_RATE_LIMITS, ...NO_CALL_LIMITS,
    STT_URL: backends.baseUrl, LLM_BASE_URL: backends.baseUrl, TTS_URL: backends.baseUrl,
  };
  const { idealMs } = await idealVoiceToVoiceMs(question.pcm, question.speechMs, env, latencies);
  log(`an agent costing nothing answers ${Math.round(idealMs)} ms after the question; load average ${loadAverage()}`);
  pin(process.pid, '1');
  const started: RunningServer[] = [];
  process.on('exit', () => started.forEach((s) => s.proc.exitCode === null && s.proc.kill('SIGKILL')));
  const start = async (id: string, cpu: string, extra: Record<string, string>): Promise<Node> => {
    const server = await startServer({ ...env, NODE_ID: id, ...extra });
    started.push(server);
    for (const pid of processTree(server.proc.pid!)) pin(pid, cpu);
    return { id, server };
  };
  const out: string[] = [];
  const all: Row[] = [];
  try {
    for (const run of runs) {
      let rows: Row[];
      if (run === 'two') {
        const database = await scratchDatabase('parley_bench_placement');
        try {
          const shared = { ...clusterEnv({ databaseUrl: database.url }), LOAD_THRESHOLD: values.threshold };
          const a = await start('node-a', '0', shared);
          const b = await start('node-b', '1', { ...shared, CREATE_DEV_KEY: 'false' });
          rows = await ramped(run, [a, b], twoRamp, question, idealMs);
          await Promise.all([a.server.stop(), b.server.stop()]);
        } finally {
          await database.drop();
        }
      } else {
        const node = await start('node-a', '0', { LOAD_THRESHOLD: run === 'with' ? values.threshold : '0' });
        rows = await ramped(run, [node], ramp, question, idealMs);
        await node.server.stop();
      }
      all.push(...rows);
      const title = run === 'two' ? `Two nodes, LOAD_THRESHOLD=${values.threshold}` : run === 'with' ? `One node, LOAD_THRESHOLD=${values.threshold}` : 'One node, LOAD_THRESHOLD=0 (no load-aware admission)';
      out.push(`${title}:\n\n${table(rows)}\n`);
      process.stdout.write(`${out.at(-1)}\n`);
    }
  } finally {
    log(`model backends answered ${JSON.stringify(await backends.stop())}; load average ${loadAverage()}`);
  }
  if (values.json) writeFileSync(values.json, JSON.stringify({ date: new Date().toISOString(), options: values, idealMs, rows: all }, null, 2));
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
