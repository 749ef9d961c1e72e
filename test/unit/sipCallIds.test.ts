// Which worker a SIP message belongs to under PARLEY_WORKERS (src/sip/callIds.ts): a Call-ID Parley
// made names its worker; any other is spread by its hash, the same way every time; outside the
// workers Parley's own Call-IDs name none.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newCallId, workerOfCallId } from '../../src/sip/callIds.ts';

test("a Call-ID of Parley's own goes to the worker it names; one naming no worker there is hashed", () => {
  assert.equal(workerOfCallId('0123456789abcdef0123.w2@parley', 2), 2);
  assert.equal(workerOfCallId('0123456789abcdef0123.w1@parley', 4), 1);
  // A worker beyond the count (the count lowered since) names none: the hash decides.
  assert.ok([1, 2].includes(workerOfCallId('0123456789abcdef0123.w5@parley', 2)));
});

test("other Call-IDs: always the same worker for the same Call-ID, and spread evenly", () => {
  for (const workers of [2, 3, 4]) {
    const counts = new Array<number>(workers + 1).fill(0);
    for (let i = 0; i < 12_000; i++) {
      const callId = `${i}-caller@192.0.2.${i % 250}`;
      const worker = workerOfCallId(callId, workers);
      assert.equal(workerOfCallId(callId, workers), worker);
      counts[worker]!++;
    }
    assert.equal(counts[0], 0, 'workers are numbered from 1');
    for (let w = 1; w <= workers; w++) assert.ok(Math.abs(counts[w]! - 12_000 / workers) < 12_000 / workers / 10, `worker ${w} of ${workers}: ${counts[w]} of 12000`);
  }
});

test('outside PARLEY_WORKERS a new Call-ID names no worker, and each is new', () => {
  const a = newCallId();
  assert.match(a, /^[0-9a-f]{20}@parley$/);
  assert.notEqual(newCallId(), a);
});
