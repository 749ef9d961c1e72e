// The built-in speech recogniser's workers: what they cost the node to start, to hold and per call,
// for the worker processes of this checkout or another build's recogniser (worker threads before
// issue 43). Figures: time from start to ready, the node's PSS and its workers' (child processes,
// from /proc) idle and after recognitions, the node's own CPU per second of audio (the audio crossing
// to the workers), how long a final transcript takes after the last audio, and how long close takes.
// Usage: node --import tsx bench/stt-workers.ts [--module dist/agent/stt/pocketsphinx.js] [--workers 2] [--rounds 8]
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Recognizer, RecognitionStream } from '../src/agent/stt/types.ts';
import { downsample48kTo16k } from '../src/media/audio/resample.ts';
import { childPids } from '../test/helpers/processes.ts';
import { speak } from '../test/helpers/speech.ts';
import { percentile } from './lib/talker.ts';

const { values: args } = parseArgs({
  options: { module: { type: 'string', default: 'src/agent/stt/pocketsphinx.ts' }, workers: { type: 'string', default: '2' }, rounds: { type: 'string', default: '8' } },
});
const workers = Number(args.workers);
const { PocketSphinxRecognizer } = (await import(pathToFileURL(resolve(args.module)).href)) as {
  PocketSphinxRecognizer: new (o: { workers: number }) => Recognizer;
};

const mb = (kb: number) => (kb / 1024).toFixed(0);
/** Proportional set size: pages shared between processes (the node binary's, the libraries') counted once in all. */
const rssKb = (pid: number | 'self') => {
  try {
    return Number(/Pss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
};
/** The recogniser's worker processes (not tsx's esbuild, nor flite). */
const workerPids = () => childPids(process.pid).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('pocketsphinx'));
const memory = () => {
  const kids = workerPids();
  return { node: rssKb('self'), workers: kids.reduce((sum, pid) => sum + rssKb(pid), 0), processes: kids.length };
};
/** CPU of the node's main thread (the event loop), in ms: worker threads, where there are, excluded. */
const cpuMs = () => {
  const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

async function ready(rec: Recognizer): Promise<void> {
  while (rec.health().state !== 'ready') await sleep(10);
}

const speech = downsample48kTo16k(speak('good morning, what time is it please'));
const audioSeconds = speech.length / 16_000;

/** Writes the sentence at real-time pace (20 ms pieces); resolves with ms from the last piece to the transcript. */
async function recognise(stream: RecognitionStream): Promise<{ ms: number; text: string }> {
  const started = performance.now();
  for (let i = 0, n = 0; i < speech.length; i += 320, n++) {
    stream.write(speech.subarray(i, i + 320));
    const due = started + (n + 1) * 20 - performance.now();
    if (due > 0) await sleep(due);
  }
  const last = performance.now();
  const text = await stream.finish();
  return { ms: performance.now() - last, text };
}

const base = memory();
console.log(`module ${args.module}, ${workers} workers; node PSS before: ${mb(base.node)} MB`);

const t0 = performance.now();
const rec = new PocketSphinxRecognizer({ workers });
await ready(rec);
console.log(`start to ready: ${(performance.now() - t0).toFixed(0)} ms`);
await sleep(500);
const idle = memory();
console.log(`ready, idle: node PSS ${mb(idle.node)} MB (+${mb(idle.node - base.node)}), worker processes ${idle.processes} with ${mb(idle.workers)} MB`);

const finals: number[] = [];
let wrong = 0;
const cpuBefore = cpuMs();
let audio = 0;
for (let round = 0; round < Number(args.rounds); round++) {
  // As many calls at once as there are workers.
  const results = await Promise.all(Array.from({ length: workers }, () => recognise(rec.start())));
  for (const r of results) {
    finals.push(r.ms);
    if (!/time is it/.test(r.text)) wrong++;
  }
  audio += audioSeconds * workers;
}
const nodeCpuPerAudioSecond = (cpuMs() - cpuBefore) / audio;
const busy = memory();
console.log(`${finals.length} recognitions (${workers} at once, ${audioSeconds.toFixed(1)} s each, paced): final transcript after the last audio p50 ${percentile(finals, 50).toFixed(0)} ms, p95 ${percentile(finals, 95).toFixed(0)} ms, max ${Math.max(...finals).toFixed(0)} ms; ${wrong} not heard as "…time is it…"`);
console.log(`the node's event loop thread: ${nodeCpuPerAudioSecond.toFixed(1)} ms of CPU per second of a call's audio`);
console.log(`after: node PSS ${mb(busy.node)} MB (+${mb(busy.node - base.node)}), worker processes ${busy.processes} with ${mb(busy.workers)} MB`);
let t1 = performance.now();
await rec.close();
console.log(`close: ${(performance.now() - t1).toFixed(0)} ms`);

// Started and closed three times more (memory a closed recogniser does not give back shows in the node's PSS).
const startMs: number[] = [];
const closeMs: number[] = [];
for (let i = 0; i < 3; i++) {
  const t = performance.now();
  const again = new PocketSphinxRecognizer({ workers });
  await ready(again);
  startMs.push(performance.now() - t);
  t1 = performance.now();
  await again.close();
  closeMs.push(performance.now() - t1);
}
console.log(`3 more starts to ready: ${startMs.map((ms) => ms.toFixed(0)).join(', ')} ms; closes ${closeMs.map((ms) => ms.toFixed(0)).join(', ')} ms; node PSS after: ${mb(memory().node)} MB (+${mb(memory().node - base.node)})`);
