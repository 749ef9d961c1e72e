// Registering upstream, on mocked timers and a stand-in for the client transactions: the challenge
// answered once (a second one is a failure), failures retried after 2 s doubling (or Retry-After),
// a success refreshed a minute before its granted expiry, each state change told.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClientTransactions, OnFinal } from '../../src/sip/clientTransactions.ts';
import type { SipCore } from '../../src/sip/core.ts';
import { parseMessage, type SipResponse } from '../../src/sip/message.ts';
import type { RegistrationState } from '../../src/sip/options.ts';
import { OutboundRegistrations } from '../../src/sip/outboundRegistrations.ts';

function response(status: number, headers: string[] = []): SipResponse {
  const text = [`SIP/2.0 ${status} X`, 'Via: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKx', 'From: <sip:u@h>;tag=1', 'To: <sip:u@h>', 'Call-ID: c', 'CSeq: 1 REGISTER', ...headers, 'Content-Length: 0', '', ''].join('\r\n');
  const parsed = parseMessage(Buffer.from(text));
  assert.ok(parsed.ok && parsed.message.kind === 'response');
  return parsed.message;
}

test('challenge answered once, failures backed off (2 s doubling, Retry-After), refreshed before expiry', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const sent: { text: string; onFinal: OnFinal }[] = [];
  const requests = { start: (_peer: unknown, _branch: string, bytes: Buffer, onFinal: OnFinal) => sent.push({ text: bytes.toString(), onFinal }) } as unknown as ClientTransactions;
  const core = { hostPortFor: () => '192.0.2.1:5060' } as unknown as SipCore;
  const states: string[] = [];
  const registrations = new OutboundRegistrations(core, requests, [{ user: 'u1', password: 'pw', host: '192.0.2.50', port: 5060, expires: 600 }], (s: RegistrationState) => states.push(`${s.state}:${s.status}`));
  registrations.start();
  assert.equal(sent.length, 1);
  assert.doesNotMatch(sent[0]!.text, /Authorization/);
  // Challenged: answered at once.
  sent[0]!.onFinal(401, response(401, ['WWW-Authenticate: Digest realm="prov", nonce="n1", qop="auth"']));
  assert.equal(sent.length, 2);
  assert.match(sent[1]!.text, /\r\nAuthorization: Digest username="u1", realm="prov", nonce="n1", uri="sip:192\.0\.2\.50:5060"/);
  // Challenged again: the password is wrong; retried after 2 s, then 4 s.
  sent[1]!.onFinal(401, response(401, ['WWW-Authenticate: Digest realm="prov", nonce="n2"']));
  assert.deepEqual(states, ['failed:401']);
  t.mock.timers.tick(1999);
  assert.equal(sent.length, 2);
  t.mock.timers.tick(1);
  assert.equal(sent.length, 3);
  sent[2]!.onFinal(408);
  t.mock.timers.tick(3999);
  assert.equal(sent.length, 3);
  t.mock.timers.tick(1);
  assert.equal(sent.length, 4);
  // The provider's Retry-After wins over the backoff.
  sent[3]!.onFinal(503, response(503, ['Retry-After: 30']));
  t.mock.timers.tick(29_999);
  assert.equal(sent.length, 4);
  t.mock.timers.tick(1);
  assert.equal(sent.length, 5);
  // Granted 300 s for our contact: refreshed at 240 s; the failure count starts over.
  sent[4]!.onFinal(200, response(200, ['Contact: <sip:u1@192.0.2.1:5060>;expires=300']));
  assert.equal(registrations.states[0]!.state, 'registered');
  assert.equal(registrations.states[0]!.failures, 0);
  t.mock.timers.tick(239_999);
  assert.equal(sent.length, 5);
  t.mock.timers.tick(1);
  assert.equal(sent.length, 6);
  assert.match(sent[5]!.text, /\r\nCSeq: 6 REGISTER\r\n/);
  assert.deepEqual(states, ['failed:401', 'failed:408', 'failed:503', 'registered:200']);
  registrations.stop();
});
