// Voice-to-voice latency of the offline pipeline: the end of the caller's speech → the first
// non-silent agent audio at the client, over N spoken turns of one call, with the server's stage
// breakdown (end-of-turn wait, transcription, first token, first synthesised audio) and its CPU.
// Usage: node --import tsx bench/voice.ts [--turns 20] [--model parley-offline]
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import wrtc from '@roamhq/wrtc';
import { openCall } from '../test/helpers/rtcClient.ts';
import { mintToken, startServer } from '../test/helpers/server.ts';
import { attachMicrophone, speak } from '../test/helpers/speech.ts';

const argv = process.argv;
const turns = Number(argv[argv.indexOf('--turns') + 1] || 20) || 20;
const model = argv.includes('--model') ? argv[argv.indexOf('--model') + 1]! : 'parley-offline';

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

const server = await startServer({ LOG_LEVEL: 'warn' });
const question = speak('what time is it');
try {
  const token = await mintToken(server.baseUrl, server.devKey);
  const client = await openCall(server.baseUrl, token, { params: { model } });
  await client.waitConnected();
  await client.nextEvent('session.created');
  const mic = await attachMicrophone(client);
  const transceiver = client.pc.getTransceivers().find((t: any) => t.receiver.track.kind === 'audio');
  const sink = new (wrtc as any).nonstandard.RTCAudioSink(transceiver.receiver.track);
  let firstLoudAt: number | undefined;
  let lastLoudAt = 0;
  const loudTimes: number[] = [];
  let listeningSince = Infinity;
  sink.ondata = (d: { samples: Int16Array }) => {
    let sum = 0;
    for (const s of d.samples) sum += s * s;
    const loud = Math.sqrt(sum / d.samples.length) > 300;
    if (loud) {
      lastLoudAt = performance.now();
      loudTimes.push(lastLoudAt);
    }
    if (firstLoudAt === undefined && loud && performance.now() >= listeningSince) firstLoudAt = performance.now();
  };
  await sleep(1000);
  const v2v: number[] = [];
  const stages: Record<string, number[]> = {};
  const cpuStart = cpuSeconds(server.proc.pid!);
  const wallStart = performance.now();
  for (let i = 0; i < turns; i++) {
    const from = client.events.length;
    firstLoudAt = undefined;
    await mic.say(question);
    const speechEnded = performance.now();
    listeningSince = speechEnded;
    const deadline = Date.now() + 15_000;
    while (firstLoudAt === undefined && Date.now() < deadline) await sleep(5);
    const started = client.events.slice(from).find((e) => e.type === 'response.audio.started');
    if (firstLoudAt === undefined || !started) {
      console.log(`turn ${i + 1}: no reply audio (${client.events.slice(from).map((e) => e.type).join(', ')})`);
      continue;
    }
    v2v.push(firstLoudAt - speechEnded);
    for (const [k, ms] of Object.entries(started.timings ?? {})) (stages[k] ??= []).push(ms as number);
    // Let the reply finish before the next question.
    while (!client.events.slice(from).some((e) => e.type === 'response.audio.done') && Date.now() < deadline + 15_000) await sleep(20);
    await sleep(300);
  }
  const cpu = (100 * (cpuSeconds(server.proc.pid!) - cpuStart)) / ((performance.now() - wallStart) / 1000);

  // Barge-in: while a long typed reply plays, the caller speaks; how long until the agent is silent?
  const bargeIn: number[] = [];
  const interrupter = speak('stop');
  // The clip starts with silence: the caller's speech begins where it first gets loud.
  let onsetMs = 0;
  while (onsetMs * 48 < interrupter.length && Math.abs(interrupter[onsetMs * 48]!) < 500) onsetMs++;
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
  sink.stop();
  mic.stop();
  client.close();
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
