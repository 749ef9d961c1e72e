import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdlePrompt } from '../../src/agent/voice/idlePrompt.ts';

/** An idle prompt over fake timers, with the caller's audio clock and quiet flag in the test's hands. */
function setUp(idleMs: number | null) {
  const state = { inputMs: 1000, quiet: true, prompts: [] as [number, number][] };
  const idle = new IdlePrompt({ idleMs: () => idleMs, inputMs: () => state.inputMs, quiet: () => state.quiet, prompt: (from, to) => state.prompts.push([from, to]) });
  return { idle, state };
}

test('idle prompt: fires once the silence lasts, with the audio span it waited through', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { idle, state } = setUp(5000);
  idle.arm();
  state.inputMs = 5999;
  t.mock.timers.tick(4999);
  assert.deepEqual(state.prompts, []);
  t.mock.timers.tick(1);
  assert.deepEqual(state.prompts, [[1000, 5999]]);
});

test('idle prompt: cancelled, closed, not quiet, or no timeout: no prompt', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { idle, state } = setUp(5000);
  idle.arm();
  idle.cancel();
  t.mock.timers.tick(10_000);
  state.quiet = false;
  idle.arm();
  t.mock.timers.tick(10_000);
  state.quiet = true;
  idle.arm();
  idle.close();
  idle.arm();
  t.mock.timers.tick(10_000);
  assert.deepEqual(state.prompts, []);
  const none = setUp(null);
  none.idle.arm();
  t.mock.timers.tick(10_000);
  assert.deepEqual(none.state.prompts, []);
});
