// The PocketSphinx recogniser (real worker processes, the real model) on flite-spoken sentences:
// transcripts and partials, a worker that really dies mid-recognition being replaced, and
// recognisers closed, or their node exiting, while the model loads on a machine kept busy (issue 43
// item 4: terminating a worker thread there aborted the node with `napi_throw`). Not a unit test: it
// starts processes. Not among the parallel files: it loads every core on purpose for a while.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { PocketSphinxRecognizer } from '../src/agent/stt/pocketsphinx.ts';
import type { RecognitionStream, Recognizer } from '../src/agent/stt/types.ts';
import { downsample48kTo16k } from '../src/media/audio/resample.ts';
import { DEATH_PILL } from './helpers/dyingPocketsphinxProcess.mjs';
import { speak } from './helpers/speech.ts';
import { childPids } from './helpers/processes.ts';
import { until } from './helpers/wait.ts';

const recognizers: Recognizer[] = [];
after(() => Promise.all(recognizers.map((r) => r.close())));

function recognizer(workers: number, workerEntry?: URL): PocketSphinxRecognizer {
  const r = new PocketSphinxRecognizer({ workers, ...(workerEntry ? { workerEntry } : {}) });
  recognizers.push(r);
  return r;
}

/** Writes `text`, spoken, in 20 ms pieces of 16 kHz audio (as the turn detector hands it over). */
function say(stream: RecognitionStream, text: string): void {
  const pcm = downsample48kTo16k(speak(text));
  for (let i = 0; i < pcm.length; i += 320) stream.write(pcm.subarray(i, i + 320));
}

test('a spoken sentence is transcribed, with partial transcripts on the way', async () => {
  const rec = recognizer(1);
  assert.equal(rec.health().state, 'starting');
  await until('the recogniser ready', () => rec.health().state, (s) => s === 'ready');
  const stream = rec.start();
  const partials: string[] = [];
  stream.onPartial((text) => partials.push(text));
  say(stream, 'good morning, what time is it please');
  const text = await stream.finish();
  assert.match(text, /good morning .*time is it/);
  assert.ok(partials.length >= 2, `partials arrived: ${JSON.stringify(partials)}`);
  assert.ok(partials.every((p, i) => p && p !== partials[i - 1]), 'each partial is new text');
  assert.match(partials.at(-1)!, /time is it/, `partials are the transcript so far: ${JSON.stringify(partials)}`);
});

test('an aborted recognition frees its worker for the next', async () => {
  const rec = recognizer(1);
  const first = rec.start();
  say(first, 'hello there');
  first.abort();
  await assert.rejects(first.finish(), /already finished or aborted/);
  const second = rec.start();
  say(second, 'what time is it');
  assert.equal(await second.finish(), 'what time is it');
});

test('a worker that dies mid-recognition fails that recognition only, and is replaced', async () => {
  const rec = recognizer(2, new URL('./helpers/dyingPocketsphinxProcess.mjs', import.meta.url));
  await until('the recogniser ready', () => rec.health().state, (s) => s === 'ready');
  // Two recognitions at once go to the two workers (each to the one with fewest in progress).
  const doomed = rec.start();
  const other = rec.start();
  say(doomed, 'good morning');
  say(other, 'what time is it');
  doomed.write(Int16Array.of(DEATH_PILL));
  await assert.rejects(doomed.finish(), (err: Error) => {
    assert.match(err.message, /speech recogniser worker 1 stopped \(exit code 70\); the recognition in progress there was lost/);
    return true;
  });
  const health = rec.health();
  assert.equal(health.state, 'degraded');
  assert.match(health.detail ?? '', /worker 1 stopped .*restarting it \(1 of 2 workers ready\)/);
  assert.equal(await other.finish(), 'what time is it', 'the other worker’s recognition is untouched');

  await until('the worker replaced', () => rec.health().state, (s) => s === 'ready');
  const afterwards = [rec.start(), rec.start()];
  afterwards.forEach((s) => say(s, 'what time is it'));
  assert.deepEqual(await Promise.all(afterwards.map((s) => s.finish())), ['what time is it', 'what time is it'], 'both workers recognise again');
});

test('four workers loading the model at once all become ready', async () => {
  // Each worker's decoder used to reopen PocketSphinx's one process-wide log FILE (fclosing the one
  // before): two at once closed it twice and glibc's stdio deadlocked the process at a node's start.
  const rec = recognizer(4);
  await until('four workers ready', () => rec.health().state, (s) => s === 'ready', 60_000);
});

/** A busy loop on every core until stopped (each killed after two minutes in any case). */
function burnCpu(): { stop(): Promise<void> } {
  const burners: ChildProcess[] = Array.from({ length: availableParallelism() }, () =>
    spawn(process.execPath, ['-e', 'const end = Date.now() + 120_000; while (Date.now() < end) {}'], { stdio: 'ignore' }),
  );
  return {
    stop: async () => {
      const exits = burners.map((b) => new Promise((r) => (b.exitCode !== null || b.signalCode !== null ? r(null) : b.once('exit', r))));
      for (const b of burners) b.kill('SIGKILL');
      await Promise.all(exits);
    },
  };
}

/** Whether `pid` runs (a zombie nobody reaped yet does not). */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
};

/** Moments after a start at which a recogniser is closed or its process exits: most fall while the model loads. */
const MOMENTS_MS = [0, 100, 250, 400, 600, 800, 1100, 1500, 2000, 3000];

test('a process that exits while its recogniser loads, under a CPU burner, exits cleanly and takes its workers with it', async (t) => {
  const burner = burnCpu();
  try {
    // Moments as a share of the time the model takes to load there and then (the helper times one start first).
    for (const fraction of [0.4, 0.6, 0.8, 0.95]) {
      const helper = new URL('./helpers/recogniserExit.ts', import.meta.url).pathname;
      const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', helper, String(fraction)]).then(
        ({ stdout, stderr }) => ({ code: 0 as number | string, stdout, stderr }),
        (err: { code: number | string; signal?: string; stdout: string; stderr: string }) => ({ code: err.signal ?? err.code, stdout: err.stdout, stderr: err.stderr }),
      );
      assert.equal(run.code, 0, `exit at ${fraction} of the load time: ${run.code}, ${run.stderr.slice(-600)}`);
      assert.doesNotMatch(run.stderr, /FATAL|napi_/, `exit at ${fraction} of the load time`);
      const { loadMs, workers } = JSON.parse(run.stdout) as { loadMs: number; workers: number[] };
      t.diagnostic(`exit at ${fraction} of ${loadMs} ms`);
      await until(`the workers of the process that exited at ${fraction} of ${loadMs} ms gone`, () => workers.filter(alive), (left) => left.length === 0);
    }
  } finally {
    await burner.stop();
  }
});

test('recognisers closed while they load, again and again under a CPU burner: this process lives on and a later one recognises', async () => {
  const burner = burnCpu();
  try {
    for (const delay of MOMENTS_MS) {
      const before = childPids(process.pid);
      const rec = new PocketSphinxRecognizer({ workers: 2 });
      const workers = childPids(process.pid).filter((pid) => !before.includes(pid));
      await sleep(delay);
      await rec.close();
      // Its workers are killed, not waited for.
      assert.deepEqual(workers.filter(alive), [], `closed ${delay} ms after its start: its workers are gone`);
    }
    // A worker that dies is replaced; its replacement, loading, is closed too.
    const dying = new PocketSphinxRecognizer({ workers: 1, workerEntry: new URL('./helpers/dyingPocketsphinxProcess.mjs', import.meta.url) });
    await until('the recogniser ready', () => dying.health().state, (s) => s === 'ready', 60_000);
    const doomed = dying.start();
    doomed.write(Int16Array.of(DEATH_PILL));
    await assert.rejects(doomed.finish(), /stopped \(exit code 70\)/);
    await until('its replacement loading', () => dying.health().state, (s) => s === 'degraded' || s === 'starting');
    await dying.close();
  } finally {
    await burner.stop();
  }
  const rec = recognizer(2);
  await until('a new recogniser ready', () => rec.health().state, (s) => s === 'ready', 60_000);
  const stream = rec.start();
  say(stream, 'what time is it');
  assert.equal(await stream.finish(), 'what time is it');
});
