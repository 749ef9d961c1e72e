// The in-memory rate-limit counter (a window from a subject's first request), with a clock of the
// test's own: limits, windows that start over, Retry-After, independence of subjects, bounded memory.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryRateLimitStore } from '../../src/storage/memoryRateLimits.ts';
import { decide } from '../../src/storage/rateLimits.ts';
import { KEY_PREFIX, rateLimitKey } from '../../src/storage/redisRateLimits.ts';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

test('allows `limit` requests per window, then refuses with the seconds left in the window', () => {
  const c = clock();
  const store = new MemoryRateLimitStore({ now: c.now });
  const hits = [1, 2, 3].map(() => store.hit('cs-key', 'key_a', 3, 60_000));
  assert.deepEqual(hits.map((h) => [h.allowed, h.remaining]), [[true, 2], [true, 1], [true, 0]]);
  assert.equal(hits[0]!.retryAfterSeconds, 60);
  c.advance(20_500);
  const refused = store.hit('cs-key', 'key_a', 3, 60_000);
  assert.equal(refused.allowed, false);
  assert.equal(refused.remaining, 0);
  assert.equal(refused.retryAfterSeconds, 40, '39.5 s left, rounded up');
  c.advance(39_000);
  const last = store.hit('cs-key', 'key_a', 3, 60_000);
  assert.equal(last.allowed, false, 'refusals do not end or extend the window');
  assert.equal(last.retryAfterSeconds, 1, '0.5 s left is 1 s, never 0');
});

test('the window starts over once it has passed: the count is new and so is its end', () => {
  const c = clock();
  const store = new MemoryRateLimitStore({ now: c.now });
  for (let i = 0; i < 5; i++) store.hit('calls-token', 'jti_1', 2, 10_000);
  c.advance(9_999);
  assert.equal(store.hit('calls-token', 'jti_1', 2, 10_000).allowed, false);
  c.advance(1);
  const fresh = store.hit('calls-token', 'jti_1', 2, 10_000);
  assert.deepEqual(fresh, { allowed: true, remaining: 1, retryAfterSeconds: 10 });
  c.advance(3_000);
  assert.deepEqual(store.hit('calls-token', 'jti_1', 2, 10_000), { allowed: true, remaining: 0, retryAfterSeconds: 7 });
  assert.equal(store.hit('calls-token', 'jti_1', 2, 10_000).allowed, false);
});

test('subjects and scopes count apart', () => {
  const store = new MemoryRateLimitStore({ now: clock().now });
  assert.equal(store.hit('cs-ip', '10.0.0.1', 1, 60_000).allowed, true);
  assert.equal(store.hit('cs-ip', '10.0.0.1', 1, 60_000).allowed, false);
  assert.equal(store.hit('cs-ip', '10.0.0.2', 1, 60_000).allowed, true, 'another address');
  assert.equal(store.hit('demo-ip', '10.0.0.1', 1, 60_000).allowed, true, 'the same address under another limit');
});

test('memory stays bounded: ended windows are pruned, and beyond the bound the oldest are forgotten', () => {
  const c = clock();
  const store = new MemoryRateLimitStore({ now: c.now, maxSubjects: 100 });
  for (let i = 0; i < 80; i++) store.hit('cs-ip', `old-${i}`, 5, 1_000);
  c.advance(1_000);
  // The next new subject past half the bound sweeps the windows that ended.
  store.hit('cs-ip', 'new-0', 5, 1_000);
  assert.equal(store.size, 1);
  for (let i = 1; i < 1_000; i++) store.hit('cs-ip', `new-${i}`, 5, 60_000);
  assert.equal(store.size, 100, 'never more than the bound');
  // The newest are kept (still limited); the oldest were forgotten (a fresh window).
  for (let i = 0; i < 5; i++) store.hit('cs-ip', 'new-999', 5, 60_000);
  assert.equal(store.hit('cs-ip', 'new-999', 5, 60_000).allowed, false);
  assert.deepEqual(store.hit('cs-ip', 'new-1', 5, 60_000), { allowed: true, remaining: 4, retryAfterSeconds: 60 });
});

test('decide: the count against the limit, Retry-After rounded up to whole seconds (at least 1)', () => {
  assert.deepEqual(decide(1, 1, 59_001), { allowed: true, remaining: 0, retryAfterSeconds: 60 });
  assert.deepEqual(decide(7, 5, 0), { allowed: false, remaining: 0, retryAfterSeconds: 1 });
});

test('Redis keys are prefixed and never hold the subject itself', () => {
  const key = rateLimitKey('cs-key', 'key_0123456789abcdef');
  assert.ok(key.startsWith(`${KEY_PREFIX}cs-key:`));
  assert.doesNotMatch(key, /0123456789abcdef/);
  assert.equal(key, rateLimitKey('cs-key', 'key_0123456789abcdef'), 'the same subject, the same key');
  assert.notEqual(key, rateLimitKey('cs-key', 'key_0123456789abcdeg'));
});
