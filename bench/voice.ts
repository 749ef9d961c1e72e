// Voice-to-voice latency of the offline pipeline at the caller: from the end of the caller's speech to
// the agent's first loud audio, over spoken turns of N simultaneous calls (libwebrtc callers), with
// the server's stage split, false ends of turn (a question cut into more than one turn) and CPU;
// with one call, barge-in too (how fast the agent falls silent when the caller speaks over it).
// The questions are bench/lib/sentences.ts, pauses included, in turn.
//
//   node --import tsx bench/voice.ts [--calls 1,2] [--turns 16] [--env KEY=VALUE ...]
//   node --import tsx bench/voice.ts --calls 1 --turns 8 --noise pink:10 --env NOISE_REDUCTION=near_field   # a noisy room (bench/noise.ts)
//   node --import tsx bench/voice.ts --calls 1 --turns 8 --echo 0.316:60   # a caller without echo cancellation
//   node --import tsx bench/voice.ts --env VAD=webrtc --env VAD_SILENCE_MS=500 --env PREPARE_REPLY_AFTER_MS=0   # the pipeline before issue 14
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startServer, NO_CALL_LIMITS } from '../test/helpers/server.ts';
import { mix, noiseFor, noiseOf, type NoiseKind } from '../test/helpers/noise.ts';
import { concat } from '../test/helpers/pcm.ts';
import { speak } from '../test/helpers/speech.ts';
import { SENTENCES } from './lib/sentences.ts';
import { cpuSeconds, mean, openTalker, percentile, type Talker } from './lib/talker.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '1,2' },
    turns: { type: 'string', default: '16' },
    env: { type: 'string', multiple: true, default: [] },
    model: { type: 'string', default: 'parley-offline' },
    /** Each question said in a noisy room: `kind:snr` (pink, brown or babble; dB), with 1 s of the noise before it and 0.8 s after. */
    noise: { type: 'string' },
    /** The caller's microphone hears the agent back: `gain:delayMs` (e.g. 0.316:60, 10 dB down; no echo cancellation). */
    echo: { type: 'string' },
  },
});
const echo = values.echo ? { gain: Number(values.echo.split(':')[0]), delayMs: Number(values.echo.split(':')[1] ?? 60) } : undefined;
const steps = values.calls!.split(',').map(Number);
const turns = Number(values.turns);
const env = Object.fromEntries(values.env!.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const [noiseKind, noiseSnr] = (values.noise ?? '').split(':') as [NoiseKind | '', string | undefined];
/** The questions, and where each one's speech ends (in the clip). */
const clips = SENTENCES.map((text) => {
  const clean = speak(text);
  let end = clean.length;
  while (end > 0 && Math.abs(clean[end - 1]!) < 500) end--;
  if (!noiseKind) return { pcm: clean, end };
  const padded = concat(new Int16Array(48_000), clean, new Int16Array(38_400));
  return { pcm: mix(padded, noiseFor(clean, noiseOf(noiseKind, padded.length / 48), Number(noiseSnr))), end: 48_000 + end };
});

/** Barge-in: while a long typed reply plays, the caller says "stop"; until the agent's audio stops at the caller. */
async function bargeIn(talker: Talker): Promise<number[]> {
  const out: number[] = [];
  const interrupter = speak('stop');
  // The clip starts with silence: the caller's speech begins where it first gets loud.
  let onsetMs = 0;
  while (onsetMs * 48 < interrupter.length && Math.abs(interrupter[onsetMs * 48]!) < 500) onsetMs++;
  const { client, mic, loudTimes } = talker;
  for (let i = 0; i < 5; i++) {
    const from = client.events.length;
    client.send({ type: 'conversation.item.create', text: 'Please read this long answer. '.repeat(12) });
    while (!client.events.slice(from).some((e) => e.type === 'response.audio.started')) await sleep(10);
    await sleep(1500);
    const spokeAt = performance.now() + onsetMs;
    loudTimes.length = 0;
    void mic.say(interrupter);
    await sleep(2000);
    // The agent stopped at the last loud frame before the first gap of 100 ms (its answer to "stop"
    // comes later, after the end of that turn).
    let stoppedAt = spokeAt;
    for (const t of loudTimes) {
      if (t - stoppedAt > 100 && stoppedAt > spokeAt) break;
      stoppedAt = t;
    }
    if (client.events.slice(from).some((e) => e.type === 'response.interrupted')) out.push(stoppedAt - spokeAt);
    await sleep(1500);
  }
  return out;
}

const server = await startServer({ LOG_LEVEL: 'warn', MAX_CONCURRENT_CALLS: '100', ...NO_CALL_LIMITS, ...env });
const rows: string[] = [];
let barge: number[] = [];
try {
  for (const n of steps) {
    const talkers = await Promise.all(Array.from({ length: n }, () => openTalker(server, values.model!, echo ? { echo } : {})));
    const cpuStart = cpuSeconds(server.proc.pid!);
    const wallStart = performance.now();
    const results = await Promise.all(
      talkers.map(async (t, i) => {
        await sleep(i * 150); // the callers do not speak in lockstep
        const v2v: number[] = [];
        const stages: Record<string, number[]> = {};
        let falseEnds = 0;
        for (let k = 0; k < turns; k++) {
          const from = t.client.events.length;
          const clip = clips[(k + i) % clips.length]!;
          const r = await t.turn(clip.pcm, clip.end);
          // More than one end of turn before the reply: the question was cut.
          const replyAt = t.client.events.findIndex((e, j) => j >= from && e.type === 'response.audio.started');
          const ends = t.client.events.slice(from, replyAt < 0 ? undefined : replyAt).filter((e) => e.type === 'input_audio_buffer.speech_stopped').length;
          falseEnds += Math.max(0, ends - 1);
          if (!r) continue;
          v2v.push(r.voiceToVoiceMs);
          for (const [key, ms] of Object.entries(r.timings)) (stages[key] ??= []).push(ms);
        }
        return { v2v, stages, falseEnds };
      }),
    );
    const cpu = (100 * (cpuSeconds(server.proc.pid!) - cpuStart)) / ((performance.now() - wallStart) / 1000);
    if (n === 1) barge = await bargeIn(talkers[0]!);
    for (const t of talkers) t.close();
    const all = results.flatMap((r) => r.v2v);
    const stage = (key: string) => Math.round(mean(results.flatMap((r) => r.stages[key] ?? [])));
    rows.push(
      `| ${n} | ${all.length}/${n * turns} | ${Math.round(percentile(all, 50))} | ${Math.round(percentile(all, 95))} | ` +
        `${stage('end_of_turn_wait_ms')} | ${stage('transcription_ms')} | ${stage('first_token_ms')} | ${stage('synthesis_ms')} | ${stage('voice_to_voice_ms')} | ` +
        `${results.reduce((s, r) => s + r.falseEnds, 0)} | ${cpu.toFixed(0)} |`,
    );
    await sleep(1000);
  }
} finally {
  await server.stop();
}

console.log(`\nvoice-to-voice, model ${values.model}${values.noise ? `, questions in ${noiseKind} noise at ${noiseSnr} dB SNR` : ''}${echo ? `, the agent heard back ×${echo.gain} ${echo.delayMs} ms late` : ''}, ${Object.keys(env).length ? `env ${JSON.stringify(env)}` : 'default settings'}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}, ${new Date().toISOString()}\n`);
console.log('| talking calls | turns answered | at the caller p50 ms | p95 ms | end-of-turn wait | transcription | first token | first audio | server voice-to-voice | false ends of turn | server CPU % of a core |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(r);
console.log('(stage columns: server means in ms, from the timings of response.audio.started)');
if (barge.length) console.log(`\nbarge-in, one call: the caller starts speaking → the agent's audio stops at the caller (${barge.length} runs): p50 ${Math.round(percentile(barge, 50))} ms, max ${Math.round(Math.max(...barge))} ms`);
