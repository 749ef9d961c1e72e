// Node-to-node signatures (src/auth/nodeAuth.ts), with a clock of the test's own: a node's signed
// request verifies on another node holding the same pepper, and names the signer; another pepper,
// another path, method, credential or node id, a stale or future time, or a made-up header do not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_SKEW_SECONDS, NodeAuth, type SignedRequest } from '../../src/auth/nodeAuth.ts';

const PEPPER = 'p'.repeat(40);
let now = 1_700_000_000_000;
const clock = () => now;

const request = (extra: Partial<SignedRequest> = {}): SignedRequest => ({
  method: 'POST',
  path: '/v1/realtime/calls/conv_1/hangup?x=1',
  headers: { authorization: 'Bearer sk_parley_ai_abc' },
  ...extra,
});

/** `req` as the receiving node sees it: the headers the sender added with the request's own. */
const sent = (from: NodeAuth, req: SignedRequest): SignedRequest => ({ ...req, headers: { ...req.headers, ...from.sign(req) } });

test("a node's signed request verifies on another node with the same pepper, naming the signer", () => {
  const a = new NodeAuth('node-a', PEPPER, clock);
  const b = new NodeAuth('node-b', PEPPER, clock);
  assert.equal(b.verify(sent(a, request())), 'node-a');
  assert.equal(b.verify(sent(a, request({ method: 'GET', path: '/v1/realtime?call_id=conv_1', headers: { 'sec-websocket-protocol': 'realtime,openai-insecure-api-key.x' } }))), 'node-a');
});

test('another pepper, a changed path, method, credential or node id, and a missing or made-up header are refused', () => {
  const a = new NodeAuth('node-a', PEPPER, clock);
  const b = new NodeAuth('node-b', PEPPER, clock);
  const other = new NodeAuth('node-a', 'q'.repeat(40), clock);
  const signed = sent(a, request());
  assert.equal(b.verify(sent(other, request())), undefined, 'another cluster');
  assert.equal(b.verify({ ...signed, path: '/v1/realtime/calls/conv_2/hangup?x=1' }), undefined, 'path');
  assert.equal(b.verify({ ...signed, method: 'GET' }), undefined, 'method');
  assert.equal(b.verify({ ...signed, headers: { ...signed.headers, authorization: 'Bearer sk_parley_ai_other' } }), undefined, 'credential');
  assert.equal(b.verify({ ...signed, headers: { ...signed.headers, 'sec-websocket-protocol': 'realtime' } }), undefined, 'subprotocols');
  assert.equal(b.verify({ ...signed, headers: { ...signed.headers, 'x-parley-forwarded-by': 'node-c' } }), undefined, 'node id');
  assert.equal(b.verify(request({ headers: { 'x-parley-forwarded-by': 'node-a' } })), undefined, 'no signature');
  assert.equal(b.verify(request({ headers: { 'x-parley-forwarded-by': 'node-a', 'x-parley-node-auth': `t=${now / 1000},s=${'A'.repeat(43)}` } })), undefined, 'made up');
  assert.equal(b.verify(request({ headers: { 'x-parley-forwarded-by': 'node-a', 'x-parley-node-auth': 'nonsense' } })), undefined, 'malformed');
});

test(`a signature older or newer than ${MAX_SKEW_SECONDS} s is refused`, () => {
  const a = new NodeAuth('node-a', PEPPER, clock);
  const b = new NodeAuth('node-b', PEPPER, clock);
  const signed = sent(a, request());
  now += MAX_SKEW_SECONDS * 1000;
  assert.equal(b.verify(signed), 'node-a', 'at the edge');
  now += 2000;
  assert.equal(b.verify(signed), undefined, 'stale');
  now -= 2 * (MAX_SKEW_SECONDS * 1000 + 2000);
  assert.equal(b.verify(signed), undefined, 'from the future');
});
