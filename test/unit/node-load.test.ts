// The node's load figure, the Opus complexity that follows it, and admission above the threshold.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, CallCapacityExceeded } from '../../src/calls/admission.ts';
import { EncoderComplexity, STEPS_UP_AFTER_SAMPLES } from '../../src/media/encoderComplexity.ts';
import { LAG_AT_FULL_LOAD_MS, MAX_CALL_COST, loadOf, projectedLoad } from '../../src/observability/nodeLoad.ts';

test('a sample loads the node as much as its busiest resource', () => {
  assert.equal(loadOf({ eventLoopBusy: 0.2, machineCpu: 0.9, loopLagMs: 0 }), 0.9);
  assert.equal(loadOf({ eventLoopBusy: 0.7, machineCpu: 0.3, loopLagMs: 5 }), 0.7);
  assert.equal(loadOf({ eventLoopBusy: 0.1, machineCpu: 0.1, loopLagMs: LAG_AT_FULL_LOAD_MS / 2 }), 0.5);
});

test('the figure stays within 0–1: a loop later than LAG_AT_FULL_LOAD_MS, or a burst projected past a full load, is 1', () => {
  assert.equal(loadOf({ eventLoopBusy: 0.3, machineCpu: 0.9, loopLagMs: 7.75 * LAG_AT_FULL_LOAD_MS }), 1);
  assert.equal(projectedLoad(0.9, 10, 40), 1);
});

test('complexity steps down a level per sample under load, to the floor, and back up slowly after', () => {
  const c = new EncoderComplexity({ max: 5, min: 2, threshold: 0.75 });
  assert.equal(c.current, 5);
  // 0.8 × 0.75 = 0.6: down from there.
  assert.equal(c.observe(0.59), 5);
  assert.deepEqual([0.61, 0.9, 0.9, 0.9, 0.9].map((l) => c.observe(l)), [4, 3, 2, 2, 2]);
  // Between 0.45 (0.6 × 0.75) and 0.6 it holds.
  assert.deepEqual([0.5, 0.5, 0.5, 0.5].map((l) => c.observe(l)), [2, 2, 2, 2]);
  // Below 0.45: a step up after each STEPS_UP_AFTER_SAMPLES quiet samples, to the ceiling.
  const quiet = Array.from({ length: 4 * STEPS_UP_AFTER_SAMPLES }, () => c.observe(0.1));
  assert.deepEqual(quiet.filter((_, i) => (i + 1) % STEPS_UP_AFTER_SAMPLES === 0), [3, 4, 5, 5]);
  // A loaded sample in between starts the count again.
  c.observe(0.9);
  assert.equal(c.current, 4);
  c.observe(0.1);
  c.observe(0.1);
  c.observe(0.7);
  c.observe(0.1);
  assert.equal(c.current, 3, 'no step up: the quiet run was broken');
});

test('with load shedding off the complexity still follows the load, against a threshold of 0.75', () => {
  const c = new EncoderComplexity({ max: 9, min: 0, threshold: 0 });
  assert.equal(c.observe(0.61), 8);
});

test('a loaded node admits no call, from any door, and says why; it does again once the load falls', () => {
  let loaded: string | undefined = 'This server is loaded (0.91, its threshold LOAD_THRESHOLD is 0.75); retry shortly or on another node.';
  const admission = new Admission(
    { maxCalls: 10, maxHalfOpen: 10, maxCallsPerKey: 0, maxHalfOpenPerKey: 0, maxCallsPerToken: 0, ownHalfOpen: { sip: 10 } },
    () => {},
    () => loaded,
  );
  assert.equal(admission.isFull, true);
  assert.equal(admission.loaded, loaded);
  for (const budget of [undefined, 'sip'] as const) {
    assert.throws(() => admission.admit({ apiKeyId: 'k', tokenId: 't', ...(budget ? { halfOpenBudget: budget } : {}) }), (err: Error) => err instanceof CallCapacityExceeded && err.message === loaded);
  }
  loaded = undefined;
  assert.equal(admission.isFull, false);
  admission.admit({ apiKeyId: 'k', tokenId: 't' }).release();
});

test('calls the figure does not show yet are projected onto it: a burst is stopped before the figure catches up', () => {
  // 60 calls shown at 0.63: 0.0105 a call; 20 more set up within a second read 0.84.
  assert.ok(Math.abs(projectedLoad(0.63, 60, 80) - 0.84) < 1e-9);
  // All shown (or fewer now): the figure itself.
  assert.equal(projectedLoad(0.63, 60, 60), 0.63);
  assert.equal(projectedLoad(0.63, 60, 40), 0.63);
  // A machine busy with others' work and few calls: each unseen call costs at most MAX_CALL_COST.
  assert.ok(Math.abs(projectedLoad(0.6, 1, 3) - (0.6 + 2 * MAX_CALL_COST)) < 1e-9);
  // An idle node: every new call at MAX_CALL_COST until the figure shows them.
  assert.ok(Math.abs(projectedLoad(0.05, 0, 10) - (0.05 + 10 * MAX_CALL_COST)) < 1e-9);
});
