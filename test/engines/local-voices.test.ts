// The Speaker with the real local voices (flite and espeak-ng through the engine's helper process):
// a reply spoken clause by clause, and a cancelled synthesis killing its program.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { createLocalSpeechEngine } from '../../src/agent/tts/local.ts';
import { Speaker } from '../../src/agent/tts/speaker.ts';
import type { SpokenChunk } from '../../src/agent/tts/types.ts';
import { until } from '../helpers/wait.ts';

/** Collects a speaker's chunks as they come (in the background). */
function collect(speaker: Speaker) {
  const chunks: SpokenChunk[] = [];
  const done = (async () => {
    for await (const c of speaker) chunks.push(c);
  })();
  return { chunks, done };
}

test('the local voices: a reply spoken clause by clause, 48 kHz, first clause short', async () => {
  const speaker = new Speaker(createLocalSpeechEngine(4), { voice: 'Victoria', signal: new AbortController().signal });
  const out = collect(speaker);
  for (const delta of ['Hello', ' there, how are', ' you today? <emotion value="happy"/>', 'I am fine', ' [laughter].']) speaker.push(delta);
  speaker.end();
  await out.done;
  const clauses = out.chunks.filter((c) => c.text);
  assert.deepEqual(clauses.map((c) => c.text), ['Hello there, ', 'how are you today? ', '<emotion value="happy"/>I am fine [laughter].']);
  for (const c of clauses) assert.ok(c.pcm.length > 48_000 * 0.3, `"${c.text}" is at least 0.3 s of 48 kHz audio (${c.pcm.length} samples)`);
  assert.ok(clauses[0]!.pcm.length < clauses[1]!.pcm.length, 'the first clause is the shortest');
});

/** Processes whose parent is `parent` (running `name`, when given). */
function childrenOf(parent: number, name?: string): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(parent), ...(name ? ['-x', name] : [])]).toString().trim().split('\n').map(Number);
  } catch {
    return []; // pgrep exits 1 when there is none
  }
}

/** Programs `name` this process started, through its engine host (a child of ours) or itself. */
function children(name: string): number {
  return [process.pid, ...childrenOf(process.pid)].flatMap((p) => childrenOf(p, name)).length;
}

test('cancelling the local engine kills its synthesis process', async () => {
  const engine = createLocalSpeechEngine(4);
  const abort = new AbortController();
  // One sentence (the engine cuts texts at sentence ends), long enough to take flite a while.
  const long = Array.from({ length: 60 }, (_, i) => `word number ${i}`).join(' ') + '.';
  const stream = engine.synthesize(long, 'Victoria', abort.signal)[Symbol.asyncIterator]();
  const first = stream.next();
  await until('flite running', () => children('flite'), (n) => n === 1);
  abort.abort();
  await assert.rejects(first, { name: 'AbortError' });
  await until('flite gone', () => children('flite'), (n) => n === 0);
  await engine.close?.();
});
