// Admission: the node's limit, the half-open budget (node-wide and per key), concurrent calls per
// key and per token; a caller's own limit wins over the node's, and tickets count once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, CallCapacityExceeded, CallLimitExceeded, type AdmissionCounts, type AdmissionLimits } from '../../src/calls/admission.ts';

const LIMITS: AdmissionLimits = { maxCalls: 10, maxHalfOpen: 4, maxCallsPerKey: 5, maxHalfOpenPerKey: 2, maxCallsPerToken: 3, ownHalfOpen: { sip: 3 } };

let token = 0;
const caller = (apiKeyId: string, tokenId = `tok_${++token}`) => ({ apiKeyId, tokenId });

function refusalOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail('expected a refusal');
}

test('a key is refused past its half-open budget while another key still gets in', () => {
  const a = new Admission(LIMITS);
  a.admit(caller('key_a'));
  a.admit(caller('key_a'));
  const refused = refusalOf(() => a.admit(caller('key_a')));
  assert.ok(refused instanceof CallLimitExceeded);
  assert.equal(refused.limit, 'calls-key-half-open');
  a.admit(caller('key_b'));
  assert.deepEqual(a.counts, { calls: 3, halfOpen: 3 });
  assert.equal(a.isFull, false);
});

test('connecting frees the half-open place; the key then counts against its calls limit', () => {
  const a = new Admission(LIMITS);
  for (let i = 0; i < 5; i++) a.admit(caller('key_a')).connected();
  assert.deepEqual(a.counts, { calls: 5, halfOpen: 0 });
  const refused = refusalOf(() => a.admit(caller('key_a')));
  assert.ok(refused instanceof CallLimitExceeded);
  assert.equal(refused.limit, 'calls-key');
});

test('per token: its calls at once, whatever its key has left', () => {
  const a = new Admission(LIMITS);
  const t = caller('key_a', 'tok_shared');
  for (let i = 0; i < 3; i++) a.admit(t).connected();
  const refused = refusalOf(() => a.admit(t));
  assert.ok(refused instanceof CallLimitExceeded);
  assert.equal(refused.limit, 'calls-token-concurrent');
  a.admit(caller('key_a')); // another token of the same key
});

test('the node-wide half-open budget makes the node full while its connected calls keep the rest', () => {
  const a = new Admission({ ...LIMITS, maxCallsPerKey: 0, maxHalfOpenPerKey: 0 });
  for (let i = 0; i < 4; i++) a.admit(caller(`key_${i}`));
  assert.equal(a.isFull, true);
  assert.ok(refusalOf(() => a.admit(caller('key_new'))) instanceof CallCapacityExceeded);
});

test('the node limit: 503 for anyone, but a caller at its own limit hears 429 (not to be passed on)', () => {
  const a = new Admission({ ...LIMITS, maxCalls: 3, maxHalfOpen: 0, maxHalfOpenPerKey: 0, maxCallsPerKey: 2 });
  a.admit(caller('key_a')).connected();
  a.admit(caller('key_a')).connected();
  a.admit(caller('key_b')).connected();
  assert.equal(a.isFull, true);
  assert.ok(refusalOf(() => a.admit(caller('key_c'))) instanceof CallCapacityExceeded);
  assert.equal(a.callerRefusal(caller('key_c')), undefined);
  const own = refusalOf(() => a.admit(caller('key_a')));
  assert.ok(own instanceof CallLimitExceeded);
  assert.ok(a.callerRefusal(caller('key_a')) instanceof CallLimitExceeded);
});

test('release gives every count back once, connected or not; 0 turns a limit off', () => {
  const seen: AdmissionCounts[] = [];
  const a = new Admission({ maxCalls: 100, maxHalfOpen: 0, maxCallsPerKey: 0, maxHalfOpenPerKey: 0, maxCallsPerToken: 0, ownHalfOpen: { sip: 1 } }, (c) => seen.push(c));
  const t = caller('key_a', 'tok_one');
  const tickets = Array.from({ length: 50 }, () => a.admit(t));
  assert.deepEqual(a.counts, { calls: 50, halfOpen: 50 });
  for (const [i, ticket] of tickets.entries()) {
    if (i % 2) ticket.connected();
    ticket.release();
    ticket.release();
    ticket.connected();
  }
  assert.deepEqual(a.counts, { calls: 0, halfOpen: 0 });
  assert.deepEqual(seen.at(-1), { calls: 0, halfOpen: 0 });
  // Nothing left over: the same key and token start from zero under tight limits.
  const b = new Admission(LIMITS);
  const ticket = b.admit(t);
  ticket.release();
  for (let i = 0; i < 2; i++) b.admit(t);
  assert.deepEqual(b.counts, { calls: 2, halfOpen: 2 });
});

test("SIP calls connecting count against SIP's own budget: the key's other calls and the node's budget are untouched", () => {
  const a = new Admission(LIMITS);
  const sip = (i: number) => ({ apiKeyId: 'key_a', tokenId: `sip_${i}`, halfOpenBudget: 'sip' });
  for (let i = 0; i < 3; i++) a.admit(sip(i));
  const refused = refusalOf(() => a.admit(sip(3)));
  assert.ok(refused instanceof CallCapacityExceeded, 'past SIP\'s budget: the door is full (503), not the key');
  assert.equal(a.isFull, false);
  // The key's WebRTC and WebSocket calls still get their own half-open budget.
  a.admit(caller('key_a'));
  a.admit(caller('key_a'));
  assert.deepEqual(a.counts, { calls: 5, halfOpen: 5 });
  // Past its calls limit, the key is refused whatever the door.
  assert.equal((refusalOf(() => a.admit(sip(4))) as CallLimitExceeded).limit, 'calls-key');
});

test('a SIP call that connects or ends gives its place in SIP\'s budget back', () => {
  const a = new Admission({ ...LIMITS, ownHalfOpen: { sip: 1 } });
  const sip = { apiKeyId: 'key_a', tokenId: 'sip_1', halfOpenBudget: 'sip' };
  a.admit(sip).connected();
  const ringing = a.admit({ ...sip, tokenId: 'sip_2' });
  assert.ok(refusalOf(() => a.admit({ ...sip, tokenId: 'sip_3' })) instanceof CallCapacityExceeded);
  ringing.release();
  a.admit({ ...sip, tokenId: 'sip_4' });
  assert.deepEqual(a.counts, { calls: 2, halfOpen: 1 });
});

/** The other nodes' calls by key, and this node's as it publishes them; undefined: Redis unreachable. */
function otherNodes(others: Map<string, number> | undefined) {
  const own = new Map<string, number>();
  return {
    own,
    set: (apiKeyId: string, calls: number) => void own.set(apiKeyId, calls),
    total: async (apiKeyId: string) => (others ? (others.get(apiKeyId) ?? 0) + (own.get(apiKeyId) ?? 0) : undefined),
    start: async () => {},
    close: async () => {},
  };
}

test("across nodes: a key's calls elsewhere count; past the limit the place is given back and the refusal says the cluster's", async () => {
  const counts = otherNodes(new Map([['key_a', 4]]));
  const a = new Admission(LIMITS, () => {}, () => undefined, counts);
  (await a.admitAcrossNodes(caller('key_a'))).connected();
  assert.equal(counts.own.get('key_a'), 1);
  const refused = await a.admitAcrossNodes(caller('key_a')).then(() => assert.fail('admitted past the limit'), (err: unknown) => err);
  assert.ok(refused instanceof CallLimitExceeded);
  assert.equal(refused.limit, 'calls-key');
  assert.match(refused.message, /already has 5 calls across the cluster \(its limit\)/);
  assert.deepEqual(a.counts, { calls: 1, halfOpen: 0 });
  assert.equal(counts.own.get('key_a'), 1, 'the refused call no longer counts');
  assert.deepEqual([...a.callsByKey], [['key_a', 1]]);
  // Another key is not touched by key_a's calls elsewhere.
  await a.admitAcrossNodes(caller('key_b'));
});

test('across nodes, Redis unreachable: the node counts the key alone, and refuses at its own limit', async () => {
  const a = new Admission(LIMITS, () => {}, () => undefined, otherNodes(undefined));
  for (let i = 0; i < 5; i++) (await a.admitAcrossNodes(caller('key_a'))).connected();
  const refused = await a.admitAcrossNodes(caller('key_a')).then(() => assert.fail('admitted past the limit'), (err: unknown) => err);
  assert.ok(refused instanceof CallLimitExceeded);
  assert.equal(refused.limit, 'calls-key');
});
