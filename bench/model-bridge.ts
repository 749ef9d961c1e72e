// Issue 46: a realtime model upstream. Node B is a second Parley (its offline agent) serving OpenAI's
// Realtime WebSocket; node A's default model is `kind: realtime` pointed at B through a relay in this
// process that timestamps each message B sends. A client on OpenAI's WebSocket asks a spoken
// question, push-to-talk (one append, commit, response.create), turns interleaved between:
//   direct   the client talking to B itself (model parley-offline);
//   bridged  the client talking to A, which bridges to B.
// Figures: the end of the caller's speech (the commit) → the first agent audio at the client, p50 and
// p95 of each and their difference (target: < 30 ms more at p50); the delay A adds between B's first
// audio delta of a reply (as it leaves the relay) and A's first audio delta to the client (target:
// p95 < 10 ms); A's CPU per bridged call while it talks (A's process CPU seconds over the bridged
// turns' wall time).
//
//   node --import tsx bench/model-bridge.ts [--turns 10]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import WebSocket, { WebSocketServer } from 'ws';
import { encodeWireAudio } from '../src/media/audio/wireAudio.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, startServer, type RunningServer } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { cpuSeconds, loadAverage, percentile } from './lib/proc.ts';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '10' } } });
const turns = Number(values.turns);

/** When B's first audio delta of each of its responses left the relay for A (performance.now()). */
const upstreamFirstAudio = new Map<string, number>();
const seenTypes = new Set<string>();

async function startRelay(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 64 * 1024 * 1024 });
  server.on('connection', (a, req) => {
    const headers: Record<string, string> = {};
    if (typeof req.headers.authorization === 'string') headers.authorization = req.headers.authorization;
    const b = new WebSocket(target + (req.url ?? ''), { headers, maxPayload: 64 * 1024 * 1024 });
    const early: string[] = [];
    // Text frames both ways, as the protocol's peers send them.
    a.on('message', (data) => (b.readyState === WebSocket.OPEN ? b.send(data.toString()) : early.push(data.toString())));
    b.on('open', () => early.splice(0).forEach((d) => b.send(d)));
    b.on('message', (data) => {
      const text = data.toString();
      seenTypes.add(/"type":\s*"([^"]+)"/.exec(text)?.[1] ?? '?');
      if (text.includes('"response.output_audio.delta"')) {
        const { response_id: id } = JSON.parse(text) as { response_id: string };
        if (!upstreamFirstAudio.has(id)) upstreamFirstAudio.set(id, performance.now());
      }
      a.send(text);
    });
    const end = () => (a.terminate(), b.terminate());
    for (const ws of [a, b]) ws.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface Socket {
  ws: WebSocket;
  events: { at: number; e: any }[];
}

async function open(server: RunningServer, model: string): Promise<Socket> {
  const ws = new WebSocket(`${server.baseUrl.replace(/^http/, 'ws')}/v1/realtime?model=${model}`, { headers: { authorization: `Bearer ${server.devKey}` } });
  const events: Socket['events'] = [];
  ws.on('message', (data) => events.push({ at: performance.now(), e: JSON.parse(data.toString()) }));
  await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
  // Push-to-talk: the client says when the caller stopped speaking.
  ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: null } } } }));
  await waitFor(events, 0, 'session.updated');
  return { ws, events };
}

async function waitFor(events: Socket['events'], from: number, type: string, timeoutMs = 60_000): Promise<{ at: number; e: any }> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const hit = events.slice(from).find((x) => x.e.type === type);
    if (hit) return hit;
    if (performance.now() > deadline) throw new Error(`no ${type} within ${timeoutMs} ms`);
    await sleep(2);
  }
}

/** One turn: ms from the commit to the first audio delta, and that delta's event. */
async function turn(s: Socket, question: Int16Array): Promise<{ firstAudioMs: number; at: number }> {
  const from = s.events.length;
  s.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: encodeWireAudio(question, 'pcm16').toString('base64') }));
  const committedAt = performance.now();
  s.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  s.ws.send(JSON.stringify({ type: 'response.create' }));
  const first = await waitFor(s.events, from, 'response.output_audio.delta');
  await waitFor(s.events, from, 'response.done');
  const audioMs = s.events.slice(from).filter((x) => x.e.type === 'response.output_audio.delta').reduce((ms, x) => ms + Buffer.from(x.e.delta, 'base64').length / 48, 0);
  // The client plays what it got before the next turn.
  await sleep(Math.max(300, audioMs - (performance.now() - first.at) + 300));
  return { firstAudioMs: first.at - committedAt, at: first.at };
}

const env = { ...NO_RATE_LIMITS, ...NO_CALL_LIMITS, LOG_LEVEL: 'warn' };
const question = speak('What time is it?', 24_000);
const dir = mkdtempSync(join(tmpdir(), 'parley-bridge-bench-'));
const b = await startServer(env);
const relay = await startRelay(b.baseUrl.replace(/^http/, 'ws'));
const modelsFile = join(dir, 'models.yaml');
writeFileSync(modelsFile, `default: upstream\nmodels:\n  - id: upstream\n    kind: realtime\n    url: ${relay.url}/v1/realtime\n    model: parley-offline\n    api_key_env: UPSTREAM_KEY\n    fallback: [parley-offline]\n`);
const a = await startServer({ ...env, MODELS_FILE: modelsFile, UPSTREAM_KEY: b.devKey });
try {
  const direct = await open(b, 'parley-offline');
  const bridged = await open(a, 'upstream');
  // One warm-up turn each (the engines' first use).
  await turn(direct, question);
  await turn(bridged, question);
  const results = { direct: [] as number[], bridged: [] as number[], added: [] as number[] };
  let bridgedCpu = 0;
  let bridgedWall = 0;
  for (let i = 0; i < turns; i++) {
    results.direct.push((await turn(direct, question)).firstAudioMs);
    const cpuBefore = cpuSeconds(a.proc.pid!);
    const wallBefore = performance.now();
    const t = await turn(bridged, question);
    bridgedCpu += cpuSeconds(a.proc.pid!) - cpuBefore;
    bridgedWall += (performance.now() - wallBefore) / 1000;
    results.bridged.push(t.firstAudioMs);
    // The upstream response this turn ran on: the latest B started before A's first delta.
    const upstream = [...upstreamFirstAudio.values()].filter((at) => at <= t.at).pop();
    if (upstream !== undefined) results.added.push(t.at - upstream);
  }
  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(0);
  console.log(`model bridge, ${turns} turns each, interleaved; load average ${loadAverage()}`);
  console.log('| | p50 ms | p95 ms |');
  console.log('|---|---:|---:|');
  console.log(`| end of speech → first audio, client ↔ B directly | ${p(results.direct, 50)} | ${p(results.direct, 95)} |`);
  console.log(`| end of speech → first audio, client ↔ A ↔ B | ${p(results.bridged, 50)} | ${p(results.bridged, 95)} |`);
  console.log(`| difference (A's cost) | ${(percentile(results.bridged, 50) - percentile(results.direct, 50)).toFixed(0)} | ${(percentile(results.bridged, 95) - percentile(results.direct, 95)).toFixed(0)} |`);
  console.log(`| B's first audio delta leaving the relay → A's first delta at the client | ${percentile(results.added, 50).toFixed(1)} | ${percentile(results.added, 95).toFixed(1)} |`);
  console.log(`A's CPU per bridged call while it talks: ${((100 * bridgedCpu) / bridgedWall).toFixed(1)} % of a core (${bridgedCpu.toFixed(2)} CPU s over ${bridgedWall.toFixed(1)} s)`);
  if (!results.added.length) console.log(`the relay saw no audio delta; types: ${[...seenTypes].join(' ')}`);
  direct.ws.close();
  bridged.ws.close();
} finally {
  await a.stop();
  await relay.close();
  await b.stop();
  rmSync(dir, { recursive: true, force: true });
}
