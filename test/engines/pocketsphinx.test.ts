// The PocketSphinx recogniser (real worker processes, the real model) on flite-spoken sentences:
// transcripts and partials, and a worker that really dies mid-recognition being replaced (closing
// and exiting while the model loads under a CPU burner: test/pocketsphinx.test.ts).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { PocketSphinxRecognizer } from '../../src/agent/stt/pocketsphinx.ts';
import type { RecognitionStream, Recognizer } from '../../src/agent/stt/types.ts';
import { downsample48kTo16k } from '../../src/media/audio/resample.ts';
import { DEATH_PILL } from '../helpers/dyingPocketsphinxProcess.mjs';
import { speak } from '../helpers/speech.ts';
import { until } from '../helpers/wait.ts';

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
  const rec = recognizer(2, new URL('../helpers/dyingPocketsphinxProcess.mjs', import.meta.url));
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
