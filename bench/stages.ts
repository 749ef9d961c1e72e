// The voice agent's stages on their own, in this process (no call): VAD cost per window (Silero vs
// WebRTC), the shortest silence that cuts none of the test sentences (per VAD) and how late each VAD
// hears the end of speech, PocketSphinx's final transcript after the end of speech (audio fed in
// real time while the caller "talks"), and the local voices' time to first audio for a first clause
// against a whole sentence.
// Usage: node --import tsx bench/stages.ts [--rounds 10]
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { PocketSphinxRecognizer } from '../src/agent/stt/pocketsphinx.ts';
import { EngineHost } from '../src/agent/tts/engineHost.ts';
import { createLocalSpeechEngine, synthesizeLocally } from '../src/agent/tts/local.ts';
import { Speaker } from '../src/agent/tts/speaker.ts';
import { createTurnDetector } from '../src/agent/turn/detector.ts';
import { sileroVadProvider } from '../src/agent/turn/silero.ts';
import type { Vad, VadProvider } from '../src/agent/turn/types.ts';
import { webrtcVadProvider } from '../src/agent/turn/webrtc.ts';
import { downsample48kTo16k } from '../src/media/audio/resample.ts';
import { concat, frames, rms, silence } from '../test/helpers/pcm.ts';
import { speak } from '../test/helpers/speech.ts';
import { SENTENCES } from './lib/sentences.ts';
import { mean, percentile } from './lib/talker.ts';

const argv = process.argv;
const rounds = Number(argv[argv.indexOf('--rounds') + 1] || 10) || 10;
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;

const VADS: VadProvider[] = [sileroVadProvider, webrtcVadProvider(2)];

console.log(`bench/stages.ts — ${new Date().toISOString()}, load average ${load()}`);
const spoken = SENTENCES.map((text) => ({ text, pcm: speak(text) }));

// 1. VAD cost: every window of all the sentences, `rounds` times.
console.log('\nVAD cost per window (16 kHz, all test sentences):');
for (const provider of VADS) {
  const vad = await provider.create();
  const audio = downsample48kTo16k(concat(...spoken.map((s) => s.pcm)));
  const n = vad.windowSamples;
  for (let i = 0; i + n <= audio.length; i += n) await vad.probability(audio.subarray(i, i + n)); // warm-up
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i + n <= audio.length; i += n) {
      const t = performance.now();
      await vad.probability(audio.subarray(i, i + n));
      times.push(performance.now() - t);
    }
  }
  const windowMs = n / 16;
  console.log(
    `  ${provider.name.padEnd(7)} window ${windowMs} ms: p50 ${ms(percentile(times, 50))}, p95 ${ms(percentile(times, 95))}, mean ${ms(mean(times))} ` +
      `→ ${((100 * mean(times)) / windowMs).toFixed(2)} % of a core per call`,
  );
  vad.close();
}

// 2. Endpointing: the shortest silence with one turn per sentence, and the end-of-turn lag.
/** Turns the detector finds in `pcm` (with silence around it) with `silenceMs`, and when the first ends. */
async function turns(provider: VadProvider, pcm: Int16Array, silenceMs: number): Promise<{ count: number; stopMs?: number }> {
  const vad = await provider.create();
  let judged = 0;
  const counted: Vad = {
    windowSamples: vad.windowSamples,
    probability: async (w) => {
      const p = await vad.probability(w);
      judged++;
      return p;
    },
    close: () => vad.close(),
  };
  let count = 0;
  let stopMs: number | undefined;
  const detector = createTurnDetector(counted, { threshold: 0.5, prefixPaddingMs: 300, silenceMs }, {
    speechStarted: () => count++,
    speech: () => {},
    speechStopped: (at) => (stopMs ??= at),
    error: (err) => {
      throw err;
    },
  });
  const input = concat(silence(1000), pcm, silence(silenceMs + 1000));
  for (const f of frames(input, 20)) detector.push(downsample48kTo16k(f));
  while (judged < Math.floor(input.length / 3 / vad.windowSamples)) await sleep(5);
  detector.close();
  return { count, ...(stopMs !== undefined ? { stopMs } : {}) };
}

console.log('\nEndpointing on the test sentences (threshold 0.5): shortest silence that keeps each sentence one turn; end-of-turn lag');
for (const provider of VADS) {
  const safe: number[] = [];
  const lags: number[] = [];
  for (const s of spoken) {
    let shortest = 0;
    for (let silenceMs = 40; silenceMs <= 600; silenceMs += 20) {
      if ((await turns(provider, s.pcm, silenceMs)).count === 1) {
        shortest = silenceMs;
        break;
      }
    }
    safe.push(shortest);
    const loud = frames(s.pcm, 10).map((f) => rms(f) > 300);
    const endMs = 1000 + (loud.lastIndexOf(true) + 1) * 10;
    const r = await turns(provider, s.pcm, 300);
    if (r.stopMs !== undefined) lags.push(r.stopMs - 300 - endMs);
  }
  console.log(`  ${provider.name.padEnd(7)} shortest safe silence per sentence: ${safe.join(', ')} ms (max ${Math.max(...safe)} ms)`);
  console.log(`  ${provider.name.padEnd(7)} end of loud speech → silence starts counting: p50 ${ms(percentile(lags, 50))}, max ${ms(Math.max(...lags))}`);
}

// 3. PocketSphinx: audio written in real time (20 ms every 20 ms), then finish().
console.log('\nPocketSphinx, final transcript after the end of speech (audio fed in real time):');
const recognizer = new PocketSphinxRecognizer({ workers: 1 });
while (recognizer.health().state !== 'ready') await sleep(50);
const finals: number[] = [];
for (let r = 0; r < Math.max(1, Math.round(rounds / 4)); r++) {
  for (const s of spoken) {
    const stream = recognizer.start();
    const pcm = downsample48kTo16k(s.pcm);
    const start = performance.now();
    for (let i = 0, k = 0; i < pcm.length; i += 320, k++) {
      stream.write(pcm.subarray(i, i + 320));
      const due = start + (k + 1) * 20 - performance.now();
      if (due > 0) await sleep(due);
    }
    const t = performance.now();
    await stream.finish();
    finals.push(performance.now() - t);
  }
}
console.log(`  ${finals.length} sentences: p50 ${ms(percentile(finals, 50))}, p95 ${ms(percentile(finals, 95))}, max ${ms(Math.max(...finals))}`);
await recognizer.close();

// 4. Local voices: first audio of a reply spoken by the Speaker (first clause) vs the whole sentence at once.
console.log('\nLocal voices (flite, Victoria), time to first audio:');
const reply = 'Sure, I can help you with that, and it will not take long at all.';
const engine = createLocalSpeechEngine(4);
const host = new EngineHost(1);
const firstClause: number[] = [];
const whole: number[] = [];
for (let r = 0; r < rounds; r++) {
  const t = performance.now();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: new AbortController().signal });
  speaker.push(reply);
  speaker.end();
  for await (const _chunk of speaker) {
    firstClause.push(performance.now() - t);
    break;
  }
  const t2 = performance.now();
  await synthesizeLocally(host, reply, 'Victoria');
  whole.push(performance.now() - t2);
}
console.log(`  Speaker, first clause ("Sure,"): p50 ${ms(percentile(firstClause, 50))}, p95 ${ms(percentile(firstClause, 95))}`);
console.log(`  whole sentence (${reply.length} chars) at once: p50 ${ms(percentile(whole, 50))}, p95 ${ms(percentile(whole, 95))}`);
host.close();
await engine.close?.();
console.log(`\nload average at the end ${load()}`);
