// What becomes of a ringing SIP call: the app's decision, the default route when none comes in
// time, the default agent when nobody is told, abandoned when the caller gives up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SipRouting, type IncomingCall, type SipRoutingOptions } from '../../src/sip/routing.ts';

const call: IncomingCall = { callId: 'conv_1', apiKeyId: 'key_a', sipHeaders: [{ name: 'From', value: '<sip:alice@example.com>' }] };

function routing(opts: Partial<SipRoutingOptions> = {}): SipRouting {
  return new SipRouting({ announce: async () => true, timeoutMs: 60_000, defaultRoute: 'answer', ...opts });
}

test("the app's decision, for its own key's ringing call only", async () => {
  const r = routing();
  const outcome = r.route(call, new AbortController().signal);
  assert.equal(r.isRinging('conv_1', 'key_a'), true);
  assert.equal(r.decide('conv_1', 'key_b', { kind: 'reject', status: 486 }), 'not_ringing');
  assert.equal(r.decide('conv_1', 'key_a', { kind: 'reject', status: 486 }), 'decided');
  assert.deepEqual(await outcome, { kind: 'reject', status: 486 });
  assert.equal(r.isRinging('conv_1', 'key_a'), false);
  assert.equal(r.decide('conv_1', 'key_a', { kind: 'accept' }), 'not_ringing', 'decided once');
});

test('nobody to tell: the default agent answers at once', async () => {
  assert.deepEqual(await routing({ announce: async () => false }).route(call, new AbortController().signal), { kind: 'accept' });
});

test('no decision in time: the default route, answer or reject (480)', async () => {
  assert.deepEqual(await routing({ timeoutMs: 10 }).route(call, new AbortController().signal), { kind: 'accept' });
  assert.deepEqual(await routing({ timeoutMs: 10, defaultRoute: 'reject' }).route(call, new AbortController().signal), { kind: 'reject', status: 480 });
});

test('the app cannot be told (the store fails): the default route, not a wait', async () => {
  const outcome = await routing({ announce: async () => Promise.reject(new Error('store down')) }).route(call, new AbortController().signal);
  assert.deepEqual(outcome, { kind: 'accept' });
});

test('the caller gives up while it rings: abandoned, and a late decision finds nothing', async () => {
  const r = routing();
  const abort = new AbortController();
  const outcome = r.route(call, abort.signal);
  abort.abort();
  assert.deepEqual(await outcome, { kind: 'abandoned' });
  assert.equal(r.decide('conv_1', 'key_a', { kind: 'accept' }), 'not_ringing');
});

test('each outcome is told with who decided it; an answered call is transferred for its own key only', async () => {
  const told: string[] = [];
  const routed = (decision: string, by: string) => told.push(`${decision} by ${by}`);
  const r = routing({ routed });
  const byApp = r.route(call, new AbortController().signal);
  r.decide('conv_1', 'key_a', { kind: 'accept' });
  await byApp;
  await routing({ routed, announce: async () => false }).route(call, new AbortController().signal);
  await routing({ routed, timeoutMs: 10, defaultRoute: 'reject' }).route(call, new AbortController().signal);
  await routing({ routed, announce: async () => Promise.reject(new Error('store down')) }).route(call, new AbortController().signal);
  const abort = new AbortController();
  const abandoned = r.route(call, abort.signal);
  abort.abort();
  await abandoned;
  const targets: string[] = [];
  r.answered('conv_1', 'key_a', (target) => targets.push(target));
  assert.equal(r.transfer('conv_1', 'key_b', 'sip:desk@example.com'), false, "another key's call");
  assert.equal(r.transfer('conv_1', 'key_a', 'sip:desk@example.com'), true);
  r.ended('conv_1');
  assert.equal(r.transfer('conv_1', 'key_a', 'sip:desk@example.com'), false, 'a call that ended');
  assert.deepEqual(targets, ['sip:desk@example.com']);
  assert.deepEqual(told, ['accept by app', 'accept by no_webhook', 'reject by default_route', 'accept by unannounced', 'abandoned by caller', 'refer by transfer']);
});
