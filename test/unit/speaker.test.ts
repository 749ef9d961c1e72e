// The Speaker: text deltas in, spoken chunks out in clause order, with a fake engine whose syntheses
// the test finishes in any order (the real local voices: test/engines/local-voices.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Speaker, SpeechSynthesisError } from '../../src/agent/tts/speaker.ts';
import type { SpeechEngine, SpokenChunk } from '../../src/agent/tts/types.ts';
import { until } from '../helpers/wait.ts';

interface Synthesis {
  text: string;
  signal: AbortSignal;
  /** Hands out one chunk of audio (`n` samples of value `value` × 1000, audible). */
  chunk(value: number, n?: number): void;
  /** Hands out this audio as it is. */
  raw(pcm: Int16Array): void;
  finish(): void;
  fail(err: Error): void;
}

/** An engine whose syntheses wait for the test: each call is recorded and driven by hand. */
function fakeEngine() {
  const calls: Synthesis[] = [];
  let running = 0;
  let maxRunning = 0;
  let finished = 0;
  const engine: SpeechEngine = {
    name: 'fake',
    health: () => ({ state: 'ready' }),
    async *synthesize(text, _voice, signal) {
      const queue: (Int16Array | Error | null)[] = [];
      let wake: (() => void) | undefined;
      const put = (x: Int16Array | Error | null) => {
        queue.push(x);
        wake?.();
      };
      calls.push({ text, signal, chunk: (value, n = 480) => put(new Int16Array(n).fill(value * 1000)), raw: (pcm) => put(pcm), finish: () => put(null), fail: (err) => put(err) });
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        for (;;) {
          if (!queue.length) await new Promise<void>((r) => (wake = r));
          if (signal.aborted) throw signal.reason;
          const x = queue.shift()!;
          if (x === null) return;
          if (x instanceof Error) throw x;
          yield x;
        }
      } finally {
        running--;
        finished++;
      }
    },
  };
  signalWatch(calls);
  return { engine, calls, maxRunning: () => maxRunning, finished: () => finished };
}

/** Wakes a synthesis waiting for the test when its signal aborts (as a killed process would end). */
function signalWatch(calls: Synthesis[]): void {
  const push = calls.push.bind(calls);
  calls.push = (...items: Synthesis[]) => {
    for (const s of items) s.signal.addEventListener('abort', () => s.finish(), { once: true });
    return push(...items);
  };
}

/** Collects a speaker's chunks as they come (in the background). */
function collect(speaker: Speaker) {
  const chunks: SpokenChunk[] = [];
  const done = (async () => {
    for await (const c of speaker) chunks.push(c);
  })();
  return { chunks, done };
}

test('clauses come out in order even when a later one is synthesised first; text only on each clause’s first chunk', async () => {
  const { engine, calls, finished } = fakeEngine();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: new AbortController().signal });
  const out = collect(speaker);
  speaker.push('Sure, I can help');
  speaker.push(' with that. And then');
  speaker.end();
  await until('two syntheses started', () => calls.length, (n) => n === 2);
  assert.deepEqual(calls.map((c) => c.text), ['Sure,', 'I can help with that.']);
  // The second clause finishes first.
  calls[1]!.chunk(2);
  calls[1]!.chunk(2);
  calls[1]!.finish();
  await until('the second synthesis over', () => finished(), (n) => n === 1);
  assert.equal(out.chunks.length, 0, 'nothing before the first clause');
  assert.equal(calls.length, 2, 'the third clause waits for the first to be delivered');
  calls[0]!.chunk(1);
  await until('first chunk out', () => out.chunks.length, (n) => n === 1);
  calls[0]!.chunk(1);
  calls[0]!.finish();
  await until('third synthesis started', () => calls.length, (n) => n === 3);
  assert.equal(calls[2]!.text, 'And then');
  calls[2]!.chunk(3);
  calls[2]!.finish();
  await out.done;
  assert.deepEqual(
    out.chunks.map((c) => [c.text, c.pcm[0]! / 1000]),
    [['Sure, ', 1], ['', 1], ['I can help with that. ', 2], ['', 2], ['And then', 3]],
  );
  assert.equal(out.chunks.map((c) => c.text).join(''), 'Sure, I can help with that. And then', 'the chunks’ texts are the reply’s text');
});

test('at most `lookahead` clauses are synthesised at once', async () => {
  const { engine, calls, maxRunning } = fakeEngine();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: new AbortController().signal, lookahead: 2 });
  const out = collect(speaker);
  speaker.push('One. Two. Three. Four. Five.');
  speaker.end();
  for (let i = 0; i < 5; i++) {
    await until(`synthesis ${i + 1} started`, () => calls.length, (n) => n === i + 1 || n === i + 2);
    calls[i]!.chunk(i + 1);
    calls[i]!.finish();
  }
  await out.done;
  assert.equal(maxRunning(), 2);
  assert.deepEqual(out.chunks.map((c) => c.text.trim()), ['One.', 'Two.', 'Three.', 'Four.', 'Five.']);
});

test('aborting the signal stops every synthesis and ends the stream', async () => {
  const { engine, calls } = fakeEngine();
  const abort = new AbortController();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: abort.signal });
  const out = collect(speaker);
  speaker.push('First clause, second clause is here. Third.');
  await until('two syntheses started', () => calls.length, (n) => n === 2);
  calls[0]!.chunk(1);
  await until('first chunk out', () => out.chunks.length, (n) => n === 1);
  abort.abort();
  await out.done;
  assert.ok(calls.every((c) => c.signal.aborted), 'every synthesis was told to stop');
  speaker.end();
  assert.equal(calls.length, 2, 'nothing more is synthesised');
  assert.equal(out.chunks.length, 1);
});

test('leaving the loop early stops the syntheses too', async () => {
  const { engine, calls } = fakeEngine();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: new AbortController().signal });
  speaker.push('Hello there, how are you? Fine.');
  speaker.end();
  await until('syntheses started', () => calls.length, (n) => n === 2);
  calls[0]!.chunk(1);
  for await (const chunk of speaker) {
    assert.equal(chunk.text, 'Hello there, ');
    break;
  }
  assert.ok(calls.every((c) => c.signal.aborted));
});

test('a failed synthesis ends the stream with a SpeechSynthesisError after the clauses before it', async () => {
  const { engine, calls } = fakeEngine();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: new AbortController().signal });
  const out = collect(speaker);
  speaker.push('Hello, world. Goodbye.');
  speaker.end();
  await until('two syntheses started', () => calls.length, (n) => n === 2);
  calls[1]!.fail(new Error('engine on fire'));
  calls[0]!.chunk(1);
  calls[0]!.finish();
  await assert.rejects(out.done, (err: Error) => {
    assert.ok(err instanceof SpeechSynthesisError);
    assert.equal(err.message, 'speech synthesis failed: engine on fire');
    assert.equal(err.clause, 'world. ');
    return true;
  });
  assert.deepEqual(out.chunks.map((c) => c.text), ['Hello, ']);
  assert.ok(calls.every((c) => c.signal.aborted), 'the rest was stopped');
});

test('a clause that yields no audio passes its text on to the next chunk', async () => {
  const { engine, calls } = fakeEngine();
  const speaker = new Speaker(engine, { voice: 'Victoria', signal: new AbortController().signal });
  const out = collect(speaker);
  speaker.push('Hmm, well. Yes.');
  speaker.end();
  await until('syntheses started', () => calls.length, (n) => n >= 2);
  calls[0]!.finish();
  calls[1]!.chunk(2);
  calls[1]!.finish();
  await until('third started', () => calls.length, (n) => n === 3);
  calls[2]!.chunk(3);
  calls[2]!.finish();
  await out.done;
  assert.deepEqual(out.chunks.map((c) => c.text), ['Hmm, well. ', 'Yes.']);
});

test("a clause's leading silence is not spoken: it starts 10 ms before its first audible sample", async () => {
  const { engine, calls } = fakeEngine();
  const speaker = new Speaker(engine, { voice: 'Emma', signal: new AbortController().signal });
  speaker.push('Hello there.');
  speaker.end();
  const out: SpokenChunk[] = [];
  const done = (async () => {
    for await (const c of speaker) out.push(c);
  })();
  await until('the synthesis', () => calls.length, (n) => n === 1);
  calls[0]!.raw(new Int16Array(4800)); // 100 ms of silence: dropped
  const voiced = new Int16Array(4800);
  voiced.fill(5000, 2400);
  calls[0]!.raw(voiced);
  calls[0]!.raw(new Int16Array(960)); // silence inside or after the voice stays
  calls[0]!.finish();
  await done;
  assert.deepEqual(out.map((c) => [c.text, c.pcm.length]), [['Hello there.', 480 + 2400], ['', 960]]);
  assert.equal(out[0]!.pcm[480], 5000);
});
