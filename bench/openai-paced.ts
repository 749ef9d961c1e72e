// Issue 36: the reply's audio over a WebSocket paced in 100 ms pieces (WEBSOCKET_AUDIO_LEAD_MS,
// default 500) against sent as synthesised (0), two servers in the same run, turns interleaved:
// 1. push-to-talk voice-to-voice at the client: a spoken question in one append, then commit and
//    response.create; from the commit to the first loud output delta, and to response.done;
// 2. the cancel window: response.cancel sent at the first audio delta → response.done's status;
// 3. memory per WebSocket session at a 15 MiB append (234 s of 24 kHz PCM16, quiet noise: the VAD
//    runs, no turn): the server's resident memory, peak over the idle baseline, for 1 and 3
//    sessions appending at once (a session.update after the append answers once it was all handled).
//
//   node --import tsx bench/openai-paced.ts [--turns 6]
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { decodeWireAudio, encodeWireAudio } from '../src/media/audio/wireAudio.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, startServer, type RunningServer } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { SENTENCES } from './lib/sentences.ts';
import { loadAverage, percentile, rssMb } from './lib/proc.ts';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '6' } } });
const turns = Number(values.turns);

interface Socket {
  ws: WebSocket;
  events: { at: number; e: any }[];
}

async function open(server: RunningServer, session: Record<string, unknown>): Promise<Socket> {
  const ws = new WebSocket(`${server.baseUrl.replace(/^http/, 'ws')}/v1/realtime?model=parley-offline`, { headers: { authorization: `Bearer ${server.devKey}` } });
  const events: { at: number; e: any }[] = [];
  ws.on('message', (data) => events.push({ at: performance.now(), e: JSON.parse(data.toString()) }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', ...session } }));
  await waitFor(events, 0, 'session.updated');
  return { ws, events };
}

async function waitFor(events: Socket['events'], from: number, type: string, timeoutMs = 60_000): Promise<{ at: number; e: any }> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const hit = events.slice(from).find((x) => x.e.type === type);
    if (hit) return hit;
    if (performance.now() > deadline) throw new Error(`no ${type}`);
    await sleep(5);
  }
}

const loud = (delta: string) => {
  const s = decodeWireAudio(Buffer.from(delta, 'base64'), 'pcm16');
  let sum = 0;
  for (const v of s) sum += v * v;
  return Math.sqrt(sum / Math.max(1, s.length)) > 300;
};

/** One push-to-talk turn: ms from the commit to the first loud delta and to response.done, and the deltas. */
async function pushToTalk(s: Socket, question: Int16Array): Promise<{ firstDelta: number; firstAudio: number; done: number; deltas: number }> {
  const from = s.events.length;
  s.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: encodeWireAudio(question, 'pcm16').toString('base64') }));
  const committedAt = performance.now();
  s.ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  s.ws.send(JSON.stringify({ type: 'response.create' }));
  const done = await waitFor(s.events, from, 'response.done');
  const deltas = s.events.slice(from).filter((x) => x.e.type === 'response.output_audio.delta');
  const first = deltas.find((x) => loud(x.e.delta)) ?? deltas[0];
  // The client plays what it got: the next turn after it has (and the server's playout) ended.
  await sleep(Math.max(300, deltas.reduce((ms, x) => ms + Buffer.from(x.e.delta, 'base64').length / 48, 0) - (performance.now() - (deltas[0]?.at ?? 0)) + 300));
  return { firstDelta: (deltas[0]?.at ?? NaN) - committedAt, firstAudio: (first?.at ?? NaN) - committedAt, done: done.at - committedAt, deltas: deltas.length };
}

async function cancelAtFirstDelta(s: Socket): Promise<string> {
  const from = s.events.length;
  let sent = false;
  const onMessage = (data: WebSocket.RawData) => {
    if (!sent && JSON.parse(data.toString()).type === 'response.output_audio.delta') {
      sent = true;
      s.ws.send(JSON.stringify({ type: 'response.cancel' }));
    }
  };
  s.ws.on('message', onMessage);
  s.ws.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Who are you?' }] } }));
  s.ws.send(JSON.stringify({ type: 'response.create' }));
  const done = await waitFor(s.events, from, 'response.done');
  s.ws.off('message', onMessage);
  await sleep(2500);
  const refused = s.events.slice(from).some((x) => x.e.type === 'error');
  return `${done.e.response.status}${refused ? ' (cancel refused)' : ''}`;
}

/** Peak resident memory of the server over its idle level while `sessions` each append 15 MiB at once. */
async function appendMemory(server: RunningServer, sessions: number): Promise<{ peakMb: number; handledMs: number }> {
  const sockets = await Promise.all(Array.from({ length: sessions }, () => open(server, { audio: { input: { turn_detection: { type: 'server_vad' } } } })));
  // Quiet noise, the same for each (the VAD runs, no turn).
  const samples = new Int16Array((15 * 1024 * 1024 * 3) / 4 / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round((Math.random() - 0.5) * 40);
  const append = JSON.stringify({ type: 'input_audio_buffer.append', audio: encodeWireAudio(samples, 'pcm16').toString('base64') });
  await sleep(500);
  const idle = rssMb(server.proc.pid!);
  let peak = idle;
  const sampling = setInterval(() => (peak = Math.max(peak, rssMb(server.proc.pid!))), 20);
  const started = performance.now();
  const froms = sockets.map((s) => s.events.length);
  for (const s of sockets) {
    s.ws.send(append);
    s.ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'after the append' } }));
  }
  await Promise.all(sockets.map((s, i) => waitFor(s.events, froms[i]!, 'session.updated', 120_000)));
  const handledMs = performance.now() - started;
  await sleep(200);
  clearInterval(sampling);
  for (const s of sockets) s.ws.close();
  return { peakMb: peak - idle, handledMs };
}

const median = (xs: number[]) => percentile(xs, 50);
const env = { ...NO_RATE_LIMITS, ...NO_CALL_LIMITS };
const servers = { unpaced: await startServer({ ...env, WEBSOCKET_AUDIO_LEAD_MS: '0' }), paced: await startServer({ ...env, WEBSOCKET_AUDIO_LEAD_MS: '500' }) };
try {
  console.log(`load average before: ${loadAverage()}`);
  const sockets = { unpaced: await open(servers.unpaced, { audio: { input: { turn_detection: null } } }), paced: await open(servers.paced, { audio: { input: { turn_detection: null } } }) };
  const results: Record<string, { firstDelta: number; firstAudio: number; done: number; deltas: number }[]> = { unpaced: [], paced: [] };
  for (let k = 0; k < turns; k++) {
    const question = speak(SENTENCES[k % SENTENCES.length]!, 24_000);
    for (const name of (k % 2 ? ['paced', 'unpaced'] : ['unpaced', 'paced']) as ('paced' | 'unpaced')[]) results[name]!.push(await pushToTalk(sockets[name], question));
  }
  for (const name of ['unpaced', 'paced'] as const) {
    const r = results[name]!;
    console.log(
      `${name.padEnd(8)} push-to-talk, commit → first delta: median ${median(r.map((x) => x.firstDelta)).toFixed(0)} ms, → first loud delta: median ${median(r.map((x) => x.firstAudio)).toFixed(0)} ms (p90 ${percentile(r.map((x) => x.firstAudio), 90).toFixed(0)}), → response.done: median ${median(r.map((x) => x.done)).toFixed(0)} ms, deltas a reply: median ${median(r.map((x) => x.deltas))}`,
    );
  }
  for (const name of ['unpaced', 'paced'] as const) console.log(`${name.padEnd(8)} response.cancel at the first delta → response.done ${await cancelAtFirstDelta(sockets[name])}`);
  for (const s of Object.values(sockets)) s.ws.close();
  for (const n of [1, 3]) {
    const m = await appendMemory(servers.paced, n);
    console.log(`15 MiB append, ${n} session(s) at once: server RSS peak +${m.peakMb.toFixed(0)} MB over idle (${(m.peakMb / n).toFixed(0)} MB a session), handled in ${(m.handledMs / 1000).toFixed(1)} s`);
  }
  console.log(`load average after: ${loadAverage()}`);
} finally {
  await servers.unpaced.stop();
  await servers.paced.stop();
}
