// Noise and echo: the voice agent's ears (noise suppression → echo guard → Silero VAD with the
// endpointing policy → PocketSphinx) run in this process on the benchmark sentences (bench/lib/
// sentences.ts) mixed with pink noise, brown noise and babble at 20, 10 and 5 dB SNR (made by
// test/helpers/noise.ts with sox and flite), each sentence with 1.5 s of the noise alone before and
// after it; and an echo condition: the agent's reply heard back 10 dB down and 40–120 ms late, alone
// (every speech start is a false barge-in) and with the caller saying "stop" over it (how late the
// VAD hears it). Per condition, without and with suppression (NOISE_REDUCTION / noise_reduction):
//   false starts  speech starts in the noise alone (each one a barge-in if the agent were speaking),
//                 and of those, turns with words (each one a reply to nobody)
//   false ends    ends of turn inside a sentence (a question cut in two)
//   not ended     sentences whose turn the noise held open until the noise stopped (no answer)
//   WER           word error rate of the turns' transcripts over the sentences
//   end lag       from the end of the sentence's speech to the end of its turn (audio time, p50; the
//                 300 ms of silence included): the part of voice-to-voice that noise changes (the rest
//                 is transcription, model and synthesis, measured over real calls by bench/voice.ts)
// and the suppressor's CPU per call.
//
//   node --import tsx bench/noise.ts [--kinds pink,brown,babble] [--snr 20,10,5] [--types off,near_field] [--no-echo] [--suppress turns|all]
import { setTimeout as sleep } from 'node:timers/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createNoiseSuppressor, type NoiseSuppressor } from '../src/agent/noise/suppressor.ts';
import { TurnSuppressor } from '../src/agent/noise/turnSuppressor.ts';
import { PocketSphinxRecognizer } from '../src/agent/stt/pocketsphinx.ts';
import type { RecognitionStream } from '../src/agent/stt/types.ts';
import { createTurnDetector } from '../src/agent/turn/detector.ts';
import { EchoGuard } from '../src/agent/turn/echoGuard.ts';
import { sileroVadProvider } from '../src/agent/turn/silero.ts';
import type { Vad } from '../src/agent/turn/types.ts';
import { downsample48kTo16k } from '../src/media/audio/resample.ts';
import type { NoiseReduction } from '../src/session/session.ts';
import { FakeAudioOut } from '../test/helpers/agentFakes.ts';
import { mix, noiseFor, noiseOf, type NoiseKind } from '../test/helpers/noise.ts';
import { concat, frames, rms, silence } from '../test/helpers/pcm.ts';
import { speak } from '../test/helpers/speech.ts';
import { SENTENCES } from './lib/sentences.ts';
import { percentile } from './lib/talker.ts';

const { values } = parseArgs({
  options: {
    kinds: { type: 'string', default: 'pink,brown,babble' },
    snr: { type: 'string', default: '20,10,5' },
    types: { type: 'string', default: 'off,near_field' },
    'no-echo': { type: 'boolean', default: false },
    /** Where the suppressor runs: on the turns' audio only, for the recogniser (as the voice agent does), or on all the audio, before the VAD too. */
    suppress: { type: 'string', default: 'turns' },
  },
});
const kinds = values.kinds!.split(',').filter(Boolean) as NoiseKind[];
const snrs = values.snr!.split(',').filter(Boolean).map(Number);
const types = values.types!.split(',') as ('off' | NoiseReduction)[];

const PAD_MS = 1500;
const SETTINGS = { threshold: 0.5, prefixPaddingMs: 300, silenceMs: 300 };

console.log(`bench/noise.ts — ${new Date().toISOString()}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const sentences = SENTENCES.map((text) => {
  const pcm = speak(text);
  // Where its speech ends: the last loud 10 ms (flite leaves silence after it).
  const loud = frames(pcm, 10).map((f) => rms(f) > 300);
  return { text, pcm, endMs: (loud.lastIndexOf(true) + 1) * 10 };
});
const recognizer = new PocketSphinxRecognizer({ workers: 1 });
while (recognizer.health().state !== 'ready') await sleep(50);

interface Turn {
  startMs: number;
  endMs?: number;
  text: Promise<string>;
}

/**
 * The agent's ears over `input` (48 kHz, as the WebRTC transport decodes it): 20 ms frames at 16 kHz,
 * through the suppressor (unless off), the echo guard (when the agent's `reply` plays from `replyAtMs`),
 * the VAD and the recogniser. Returns the turns, in audio ms.
 */
async function listen(input: Int16Array, type: 'off' | NoiseReduction, echo?: { reply: Int16Array; atMs: number; guard: boolean }): Promise<Turn[]> {
  const vad = await sileroVadProvider.create();
  let judged = 0;
  const counted: Vad = { windowSamples: vad.windowSamples, probability: async (w) => ((judged++, await vad.probability(w))), close: () => vad.close() };
  const turns: Turn[] = [];
  let stream: RecognitionStream | undefined;
  const detector = createTurnDetector(counted, SETTINGS, {
    speechStarted: (at, preroll) => {
      turnSuppressor?.turnStarts(at);
      stream = recognizer.start();
      stream.write(beforeStt(preroll));
      turns.push({ startMs: at, text: Promise.resolve('') });
    },
    speech: (pcm) => stream?.write(beforeStt(pcm)),
    speechStopped: (at) => {
      const t = turns.at(-1)!;
      t.endMs = at;
      t.text = stream!.finish();
      stream = undefined;
    },
    error: (err) => {
      throw err;
    },
  });
  const suppressor: NoiseSuppressor | undefined = type === 'off' ? undefined : createNoiseSuppressor(type);
  const everywhere = values.suppress === 'all';
  const turnSuppressor = suppressor && !everywhere ? new TurnSuppressor(suppressor) : undefined;
  const beforeStt = (pcm: Int16Array) => (turnSuppressor ? turnSuppressor.process(pcm) : pcm);
  const out = new FakeAudioOut();
  const guard = echo?.guard ? new EchoGuard(16_000) : undefined;
  const speaker = guard ? guard.watch(out) : out;
  const frames = Math.floor(input.length / 960);
  for (let k = 0; k < frames; k++) {
    if (echo && k * 20 === echo.atMs) speaker.write(echo.reply);
    out.play(20);
    let frame = downsample48kTo16k(input.subarray(k * 960, (k + 1) * 960));
    if (suppressor && everywhere) frame = suppressor.process(frame);
    if (guard) frame = guard.filter(frame);
    turnSuppressor?.heard(frame);
    detector.push(frame);
  }
  while (judged < Math.floor((frames * 320) / vad.windowSamples) - 1) await sleep(2);
  detector.close();
  suppressor?.close();
  if (stream) turns.at(-1)!.text = stream.finish();
  await Promise.all(turns.map((t) => t.text));
  return turns;
}

const words = (s: string) => s.toLowerCase().replace(/[^a-z' ]/g, ' ').split(/\s+/).filter(Boolean);

/** Word-level edit distance. */
function edits(ref: string[], hyp: string[]): number {
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const cur = [i];
    for (let j = 1; j <= hyp.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[hyp.length]!;
}

interface Row {
  condition: string;
  type: string;
  falseStarts: number;
  falseTurns: number;
  falseEnds: number;
  /** Sentences whose turn had not ended 1.5 s after them (the noise held it open). */
  unended: number;
  wer: number;
  endLagMs: number;
}
const rows: Row[] = [];

/** Every sentence in `noise` (or silence) at `snrDb`. */
async function condition(name: string, kind: NoiseKind | undefined, snrDb: number, type: 'off' | NoiseReduction): Promise<Row> {
  let falseStarts = 0;
  let falseTurns = 0;
  let falseEnds = 0;
  let unended = 0;
  let errors = 0;
  let total = 0;
  const lags: number[] = [];
  for (const s of sentences) {
    const speech = concat(silence(PAD_MS), s.pcm, silence(PAD_MS));
    const input = kind ? mix(speech, noiseFor(s.pcm, noiseOf(kind, speech.length / 48), snrDb)) : speech;
    const turns = await listen(input, type);
    const from = PAD_MS - 200;
    const to = PAD_MS + s.pcm.length / 48 + 200;
    const inside = turns.filter((t) => t.startMs + SETTINGS.prefixPaddingMs < to && (t.endMs ?? Infinity) > from);
    const outside = turns.filter((t) => !inside.includes(t));
    falseStarts += outside.length;
    for (const t of outside) if ((await t.text).trim()) falseTurns++;
    falseEnds += Math.max(0, inside.length - 1);
    const heard = (await Promise.all(inside.map((t) => t.text))).join(' ');
    errors += edits(words(s.text), words(heard));
    total += words(s.text).length;
    const last = inside.at(-1);
    if (last?.endMs !== undefined) lags.push(last.endMs - (PAD_MS + s.endMs));
    else if (last) unended++;
  }
  return { condition: name, type, falseStarts, falseTurns, falseEnds, unended, wer: (100 * errors) / total, endLagMs: lags.length ? percentile(lags, 50) : NaN };
}

function print(r: Row): void {
  console.log(
    `  ${r.condition.padEnd(14)} ${r.type.padEnd(10)} false starts ${String(r.falseStarts).padStart(3)} (with words ${String(r.falseTurns).padStart(2)}), ` +
      `false ends ${String(r.falseEnds).padStart(2)}, not ended ${String(r.unended).padStart(2)}, WER ${r.wer.toFixed(1).padStart(5)} %, end lag p50 ${r.endLagMs.toFixed(0)} ms`,
  );
}

console.log(`\nThe ${sentences.length} benchmark sentences, each with ${PAD_MS} ms of the noise alone before and after (Silero, threshold 0.5, silence 300 ms; suppression ${values.suppress === 'all' ? 'on all the audio, before the VAD' : "on the turns' audio, for the recogniser"}):`);
const conditions: [string, NoiseKind | undefined, number][] = [['clean', undefined, Infinity], ...kinds.flatMap((k) => snrs.map((snr) => [`${k} ${snr} dB`, k, snr] as [string, NoiseKind, number]))];
for (const [name, kind, snr] of conditions) {
  for (const type of types) {
    const row = await condition(name, kind, snr, type);
    rows.push(row);
    print(row);
  }
}

// The echo condition: the agent's reply heard back 10 dB down, 40–120 ms late; the caller quiet, then saying "stop".
if (!values['no-echo']) {
  const reply = speak('Sure. The next train to the city leaves at seven thirty from platform two, and it takes about forty minutes, so you will be there well before nine.');
  const stop = speak('stop');
  let stopOnsetMs = 0;
  while (stopOnsetMs * 48 < stop.length && Math.abs(stop[stopOnsetMs * 48]!) < 500) stopOnsetMs++;
  const atMs = 500;
  const stopAtMs = atMs + 2500;
  console.log('\nEcho: the agent\'s reply (≈ 8 s) heard back 10 dB down, 40, 60, 80, 100, 120 ms late; then the same with the caller saying "stop" 2.5 s into it:');
  {
    const alone = await listen(concat(silence(stopAtMs), stop, silence(1000)), 'off');
    const t = alone[0];
    console.log(`  no echo at all: "stop" heard ${alone.length ? 'yes' : 'no'}, VAD onset after its start ${t ? (t.startMs + SETTINGS.prefixPaddingMs - (stopAtMs + stopOnsetMs)).toFixed(0) : '—'} ms`);
  }
  for (const guard of [false, true]) {
    let falseBargeIns = 0;
    let heardStop = 0;
    const stopLags: number[] = [];
    for (const delayMs of [40, 60, 80, 100, 120]) {
      const echo = concat(silence(atMs + delayMs), reply.map((x) => Math.round(x * 0.316)), silence(1500));
      falseBargeIns += (await listen(echo, 'off', { reply, atMs, guard })).length;
      const withStop = mix(echo, concat(silence(stopAtMs), stop));
      const turns = await listen(withStop, 'off', { reply, atMs, guard });
      const barge = turns.find((t) => t.startMs + SETTINGS.prefixPaddingMs >= stopAtMs + stopOnsetMs - 100);
      if (barge) {
        heardStop++;
        // The onset is reported prefix_padding_ms before the first speech window: the VAD's lag is when it could tell.
        stopLags.push(barge.startMs + SETTINGS.prefixPaddingMs - (stopAtMs + stopOnsetMs));
      }
    }
    const row = { condition: 'echo −10 dB', type: guard ? 'guard' : 'no guard', falseStarts: falseBargeIns, falseTurns: 0, falseEnds: 0, unended: 0, wer: NaN, endLagMs: NaN };
    rows.push(row);
    console.log(`  echo guard ${guard ? 'on ' : 'off'}: false barge-ins ${falseBargeIns} in 5 replies; "stop" heard ${heardStop} of 5, VAD onset after its start p50 ${stopLags.length ? percentile(stopLags, 50).toFixed(0) : '—'} ms`);
  }
}

// The suppressor's CPU per call: 60 s of babble at 10 dB, in 20 ms frames.
{
  const s = createNoiseSuppressor('near_field');
  const audio = downsample48kTo16k(noiseOf('babble', 60_000));
  for (let i = 0; i < 16_000 * 5; i += 320) s.process(audio.subarray(i, i + 320));
  const before = process.cpuUsage();
  for (let i = 0; i < audio.length; i += 320) s.process(audio.subarray(i, i + 320));
  const used = process.cpuUsage(before);
  s.close();
  const usPerFrame = (used.user + used.system) / (audio.length / 320);
  console.log(
    `\nSuppressor CPU: ${usPerFrame.toFixed(0)} µs per 20 ms frame it runs on → ${(usPerFrame / 200).toFixed(2)} % of a core while it runs; ` +
      `it runs on the caller's turns only: ${(usPerFrame / 200 * 0.4).toFixed(2)} % of a core for a call where the caller speaks 40 % of the time (load average ${loadavg()[0]!.toFixed(2)})`,
  );
}
await recognizer.close();
