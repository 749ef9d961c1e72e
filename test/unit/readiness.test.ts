// The readiness registry behind /readyz.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metrics } from '../../src/observability/metrics.ts';
import { ReadinessChecks } from '../../src/observability/readiness.ts';

test('ready while no check is starting or failed (degraded still serves); each check reports its own state', async () => {
  const checks = new ReadinessChecks();
  assert.deepEqual(await checks.evaluate(), { ready: true, checks: {} });
  let speech: 'starting' | 'ready' | 'degraded' = 'starting';
  checks.register('database', () => ({ state: 'ready' }));
  checks.register('speech', { health: () => ({ state: speech, detail: speech === 'ready' ? undefined : 'loading models' }) });
  checks.register('redis', async () => ({ state: 'ready' }));
  assert.deepEqual(await checks.evaluate(), {
    ready: false,
    checks: { database: { state: 'ready' }, speech: { state: 'starting', detail: 'loading models' }, redis: { state: 'ready' } },
  });
  // Degraded serves (an HTTP engine after one failed request): taking the node out of rotation
  // would keep it from ever succeeding again.
  speech = 'degraded';
  assert.equal((await checks.evaluate()).ready, true, 'degraded is ready');
  speech = 'ready';
  assert.equal((await checks.evaluate()).ready, true);
});

test('a check that throws or hangs counts as failed', async () => {
  const checks = new ReadinessChecks();
  checks.register('throws', () => {
    throw new Error('boom');
  });
  checks.register('hangs', () => new Promise(() => {}));
  const result = await checks.evaluate(50);
  assert.equal(result.ready, false);
  assert.deepEqual(result.checks.throws, { state: 'failed', detail: 'boom' });
  assert.deepEqual(result.checks.hangs, { state: 'failed', detail: 'no answer within 50 ms' });
});

test('parley_readiness_check: each check at each scrape, 1 for the state it is in and 0 for the others', async () => {
  const metrics = new Metrics();
  assert.doesNotMatch(await metrics.registry.getSingleMetricAsString('parley_readiness_check'), /check=/, 'no series before the checks are known');
  const checks = new ReadinessChecks();
  let database: 'ready' | 'failed' = 'ready';
  checks.register('database', () => ({ state: database }));
  checks.register('event_loop', () => ({ state: 'degraded', detail: 'late' }));
  metrics.watchReadiness(checks);
  const series = async () => {
    const text = await metrics.registry.getSingleMetricAsString('parley_readiness_check');
    return new Map([...text.matchAll(/^parley_readiness_check\{check="(\w+)",state="(\w+)"\} (\d)$/gm)].map((m) => [`${m[1]}/${m[2]}`, Number(m[3])]));
  };
  let s = await series();
  assert.equal(s.size, 8, 'four states for each of the two checks');
  assert.equal(s.get('database/ready'), 1);
  assert.equal(s.get('database/failed'), 0);
  assert.equal(s.get('event_loop/degraded'), 1);
  assert.equal(s.get('event_loop/ready'), 0);
  database = 'failed';
  s = await series();
  assert.equal(s.get('database/ready'), 0);
  assert.equal(s.get('database/failed'), 1);
});
