// Voice-to-voice latency of the offline pipeline: the end of the caller's speech → the first
// non-silent agent audio at the client, over N spoken turns of one call, with the server's stage
// breakdown (end-of-turn wait, transcription, first token, first synthesised audio), its CPU, and
// barge-in (how fast the agent falls silent when the caller speaks over it).
// Usage: node --import tsx bench/voice.ts [--turns 20] [--model parley-offline]
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer } from '../test/helpers/server.ts';
import { speak } from '../test/helpers/speech.ts';
import { cpuSeconds, mean, openTalker, percentile } from './lib/talker.ts';

const argv = process.argv;
const turns = Number(argv[argv.indexOf('--turns') + 1] || 20) || 20;
const model = argv.includes('--model') ? argv[argv.indexOf('--model') + 1]! : 'parley-offline';

const server = await startServer({ LOG_LEVEL: 'warn' });
const question = speak('what time is it');
try {
  const talker = await openTalker(server, model);
  const v2v: number[] = [];
  const stages: Record<string, number[]> = {};
  const cpuStart = cpuSeconds(server.proc.pid!);
  const wallStart = performance.now();
  for (let i = 0; i < turns; i++) {
    const r = await talker.turn(question);
    if (!r) {
      console.log(`turn ${i + 1}: no reply audio`);
      continue;
    }
    v2v.push(r.voiceToVoiceMs);
    for (const [k, ms] of Object.entries(r.timings)) (stages[k] ??= []).push(ms);
  }
  const cpu = (100 * (cpuSeconds(server.proc.pid!) - cpuStart)) / ((performance.now() - wallStart) / 1000);

  // Barge-in: while a long typed reply plays, the caller says "stop".
  const bargeIn: number[] = [];
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
    // The agent stopped at the last loud frame before the first gap of 200 ms (its answer to
    // "stop" may follow later).
    let stoppedAt = spokeAt;
    for (const t of loudTimes) {
      if (t - stoppedAt > 200 && stoppedAt > spokeAt) break;
      stoppedAt = t;
    }
    if (client.events.slice(from).some((e) => e.type === 'response.interrupted')) bargeIn.push(stoppedAt - spokeAt);
    await sleep(500);
  }
  talker.close();

  console.log(`\nvoice-to-voice, model ${model}, ${v2v.length}/${turns} turns (${new Date().toISOString()})`);
  console.log(`end of speech → first agent audio at the client: p50 ${Math.round(percentile(v2v, 50))} ms, p95 ${Math.round(percentile(v2v, 95))} ms`);
  for (const [k, xs] of Object.entries(stages)) console.log(`  ${k}: mean ${Math.round(mean(xs))} ms, p95 ${Math.round(percentile(xs, 95))} ms`);
  console.log(`server CPU while talking (one call): ${cpu.toFixed(1)} % of one core`);
  if (bargeIn.length) {
    console.log(`barge-in, caller starts speaking → agent audio stops at the client (${bargeIn.length} runs): p50 ${Math.round(percentile(bargeIn, 50))} ms, max ${Math.round(Math.max(...bargeIn))} ms`);
  }
} finally {
  await server.stop();
}
