// OpenAI's Realtime over WebSocket beside WebRTC on the same server (issue 20):
// 1. voice-to-voice at the caller, offline pipeline: from the end of the caller's speech to the
//    agent's first loud audio — a libwebrtc caller (bench/lib/talker.ts) and a WebSocket caller that
//    appends PCM 24 kHz at real-time pace and hears response.output_audio.delta, the same questions;
// 2. concurrent WebSocket sessions on one core: each appends 20 ms of audio every 20 ms (quiet room
//    noise: the transport, resampling and VAD run, no speech so no turn); the server pinned to core 0,
//    this process to 1; the server's CPU per session, its memory, and how late a session's events come
//    back (a session.update round trip each second).
//
//   node --import tsx bench/websocket.ts [--turns 8] [--sessions 25,50,100] [--seconds 20]
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { decodeWireAudio, encodeWireAudio } from '../src/media/audio/wireAudio.ts';
import { NO_CALL_LIMITS, NO_RATE_LIMITS, startServer, type RunningServer } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { SENTENCES } from './lib/sentences.ts';
import { loadAverage, percentile, pin, processTree, rssMb, treeCpuSeconds } from './lib/proc.ts';
import { openTalker } from './lib/talker.ts';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '8' },
    sessions: { type: 'string', default: '25,50,100' },
    seconds: { type: 'string', default: '20' },
  },
});
const turns = Number(values.turns);
const steps = values.sessions!.split(',').map(Number);
const seconds = Number(values.seconds);

const socketUrl = (server: RunningServer, model: string) => `${server.baseUrl.replace(/^http/, 'ws')}/v1/realtime?model=${model}`;

/** A WebSocket session, its events kept. */
async function openSocket(server: RunningServer, model: string): Promise<{ ws: WebSocket; events: { at: number; e: any }[] }> {
  const ws = new WebSocket(socketUrl(server, model), { headers: { authorization: `Bearer ${server.devKey}` } });
  const events: { at: number; e: any }[] = [];
  ws.on('message', (data) => events.push({ at: performance.now(), e: JSON.parse(data.toString()) }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  while (!events.some((x) => x.e.type === 'session.created')) await sleep(5);
  return { ws, events };
}

/** Voice-to-voice over the WebSocket: the question at real-time pace, then until the first loud output delta. */
async function socketVoiceToVoice(server: RunningServer): Promise<number[]> {
  const { ws, events } = await openSocket(server, 'parley-offline');
  const out: number[] = [];
  try {
    for (let k = 0; k < turns; k++) {
      const question = speak(SENTENCES[k % SENTENCES.length]!, 24_000);
      const pcm = new Int16Array(question.length + 24 * 1500);
      pcm.set(question);
      const from = events.length;
      let speechEnded = 0;
      const start = performance.now();
      for (let at = 0, n = 0; at < pcm.length; at += 480, n++) {
        const piece = pcm.subarray(at, at + 480);
        if (piece.some((v) => Math.abs(v) >= 500)) speechEnded = performance.now() + 20;
        ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: encodeWireAudio(piece, 'pcm16').toString('base64') }));
        // Real-time pace against the clock, not the sum of timer delays.
        const next = start + (n + 1) * 20;
        await sleep(Math.max(0, next - performance.now()));
      }
      const deadline = performance.now() + 15_000;
      let firstLoud: number | undefined;
      while (firstLoud === undefined && performance.now() < deadline) {
        for (const x of events.slice(from)) {
          if (x.e.type !== 'response.output_audio.delta' || x.at < speechEnded) continue;
          const samples = decodeWireAudio(Buffer.from(x.e.delta, 'base64'), 'pcm16');
          let sum = 0;
          for (const s of samples) sum += s * s;
          if (Math.sqrt(sum / Math.max(1, samples.length)) > 300) {
            firstLoud = x.at;
            break;
          }
        }
        if (firstLoud === undefined) await sleep(5);
      }
      if (firstLoud !== undefined) out.push(firstLoud - speechEnded);
      while (!events.slice(from).some((x) => x.e.type === 'response.done') && performance.now() < deadline + 15_000) await sleep(20);
      await sleep(300);
    }
  } finally {
    ws.close();
  }
  return out;
}

/** Voice-to-voice over WebRTC, the same questions. */
async function webRtcVoiceToVoice(server: RunningServer): Promise<number[]> {
  const talker = await openTalker(server, 'parley-offline');
  const out: number[] = [];
  try {
    for (let k = 0; k < turns; k++) {
      const r = await talker.turn(speak(SENTENCES[k % SENTENCES.length]!));
      if (r) out.push(r.voiceToVoiceMs);
    }
  } finally {
    talker.close();
  }
  return out;
}

const summary = (xs: number[]) => (xs.length ? `${xs.length}/${turns} answered, p50 ${Math.round(percentile(xs, 50))} ms, p95 ${Math.round(percentile(xs, 95))} ms` : 'no answer');

const lines: string[] = [];
{
  const server = await startServer({ LOG_LEVEL: 'warn', ...NO_CALL_LIMITS, ...NO_RATE_LIMITS });
  try {
    lines.push(`voice-to-voice at the caller, offline pipeline, one call at a time (${turns} questions each):`);
    lines.push(`- WebRTC (libwebrtc caller): ${summary(await webRtcVoiceToVoice(server))}`);
    lines.push(`- WebSocket (PCM 24 kHz appends): ${summary(await socketVoiceToVoice(server))}`);
  } finally {
    await server.stop();
  }
}

// Concurrent sessions on one core: 20 ms appends of quiet noise (a few distinct pieces, so nothing is cached).
const noisePieces = Array.from({ length: 8 }, (_, k) => encodeWireAudio(new Int16Array(480).map((_, i) => Math.round(150 * Math.sin(i * (k + 3) * 1.7) * Math.cos(i * 0.37))), 'pcm16').toString('base64'));
const rows: string[] = [];
for (const n of steps) {
  const server = await startServer({ LOG_LEVEL: 'warn', MAX_CONCURRENT_CALLS: String(n + 10), ...NO_CALL_LIMITS, ...NO_RATE_LIMITS });
  try {
    for (const pid of processTree(server.proc.pid!)) pin(pid, '0');
    pin(process.pid, '1');
    const sessions = [];
    for (let i = 0; i < n; i++) sessions.push(await openSocket(server, 'parley-offline'));
    const rssIdle = rssMb(server.proc.pid!);
    // Each session: one second of tone, one of silence, in 20 ms appends; a session.update probe each second for lateness.
    const lateness: number[] = [];
    const cpu0 = treeCpuSeconds(server.proc.pid!);
    const t0 = performance.now();
    let tick = 0;
    while (performance.now() - t0 < seconds * 1000) {
      const message = JSON.stringify({ type: 'input_audio_buffer.append', audio: noisePieces[tick % noisePieces.length] });
      for (const s of sessions) s.ws.send(message);
      if (tick % 50 === 0) {
        for (const s of sessions) {
          const sent = performance.now();
          const from = s.events.length;
          s.ws.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: `probe ${tick}` } }));
          void (async () => {
            while (performance.now() - sent < 5000) {
              const got = s.events.slice(from).find((x) => x.e.type === 'session.updated');
              if (got) return lateness.push(got.at - sent);
              await sleep(5);
            }
          })();
        }
      }
      tick++;
      await sleep(Math.max(0, t0 + tick * 20 - performance.now()));
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = (100 * (treeCpuSeconds(server.proc.pid!) - cpu0)) / wall;
    const rssBusy = rssMb(server.proc.pid!);
    const ended = sessions.filter((s) => s.ws.readyState !== WebSocket.OPEN).length;
    for (const s of sessions) s.ws.close();
    rows.push(
      `| ${n} | ${cpu.toFixed(0)} | ${(cpu / n).toFixed(2)} | ${Math.round(rssIdle)} → ${Math.round(rssBusy)} | ${Math.round(percentile(lateness, 50))} / ${Math.round(percentile(lateness, 95))} / ${Math.round(Math.max(...lateness))} | ${ended} |`,
    );
  } finally {
    await server.stop();
  }
}

console.log(`\nbench/websocket.ts, load average ${loadAverage()}, ${new Date().toISOString()}\n`);
for (const l of lines) console.log(l);
console.log(`\nconcurrent WebSocket sessions, server pinned to core 0, each appending PCM 24 kHz every 20 ms for ${seconds} s (quiet noise: transport, resampling, VAD; no turns):\n`);
console.log('| sessions | server CPU % of a core | per session | server RSS MB idle → busy | session.update round trip p50 / p95 / max ms | sessions cut |');
console.log('|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
