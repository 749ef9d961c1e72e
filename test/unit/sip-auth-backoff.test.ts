// The backoff of an address that sends wrong SIP digest passwords: after N wrong ones in a row
// (for any user, or names that are none) the address is refused, for a wait that doubles with each
// further wrong one; the right password once the wait is over starts the count over; other
// addresses, the user's own phone among them, are not held. And the callers' way through it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { AuthBackoff } from '../../src/sip/authBackoff.ts';
import { callerAdmission } from '../../src/sip/callerAdmission.ts';
import { DigestAuth } from '../../src/sip/digest.ts';
import { parseMessage, type SipRequest } from '../../src/sip/message.ts';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** An INVITE from `user` (Call-ID `callId`), answering `auth`'s challenge for it from `address` with `password` when given one. */
function invite(auth: DigestAuth, address: string, callId: string, credentials?: { user: string; password: string }): SipRequest {
  const uri = 'sip:agent@h';
  const lines = [`INVITE ${uri} SIP/2.0`, 'Via: SIP/2.0/UDP 192.0.2.9;branch=z9hG4bKx', 'From: <sip:x@h>;tag=1', 'To: <sip:agent@h>', `Call-ID: ${callId}`, 'CSeq: 1 INVITE'];
  if (credentials) {
    const nonce = /nonce="([^"]+)"/.exec(auth.challenge({ source: address, callId, uri }))![1]!;
    const response = md5(`${md5(`${credentials.user}:parley:${credentials.password}`)}:${nonce}:00000001:xyz:auth:${md5(`INVITE:${uri}`)}`);
    lines.push(`Authorization: Digest username="${credentials.user}", realm="parley", nonce="${nonce}", uri="${uri}", response="${response}", qop=auth, nc=00000001, cnonce="xyz", algorithm=MD5`);
  }
  const parsed = parseMessage(Buffer.from([...lines, 'Content-Length: 0', '', ''].join('\r\n')));
  assert.ok(parsed.ok && parsed.message.kind === 'request');
  return parsed.message;
}

test('after N wrong passwords an address waits 30 s, then twice as long after each further wrong one, up to 30 minutes', () => {
  const backoff = new AuthBackoff(3);
  const t0 = 1_000_000;
  assert.equal(backoff.attempt('198.51.100.1', false, t0), 'wrong');
  assert.equal(backoff.attempt('198.51.100.1', false, t0), 'wrong');
  assert.equal(backoff.waitFor('198.51.100.1', t0), 0, 'two wrong passwords: no wait yet');
  assert.equal(backoff.attempt('198.51.100.1', false, t0), 'wrong');
  assert.equal(backoff.waitFor('198.51.100.1', t0), 30_000);
  assert.equal(backoff.attempt('198.51.100.1', true, t0 + 1000), 'backoff', 'the right password waits too');
  assert.equal(backoff.attempt('198.51.100.2', true, t0 + 1000), 'admitted', 'another address is not held');
  assert.equal(backoff.attempt('198.51.100.1', false, t0 + 30_000), 'wrong', 'the wait is over');
  assert.equal(backoff.waitFor('198.51.100.1', t0 + 30_000), 60_000);
  // A wrong one each time the wait is over.
  let now = t0 + 30_000;
  for (let i = 0; i < 10; i++) {
    now += backoff.waitFor('198.51.100.1', now);
    assert.equal(backoff.attempt('198.51.100.1', false, now), 'wrong');
  }
  assert.equal(backoff.waitFor('198.51.100.1', now), 30 * 60_000, 'capped');
  now += 30 * 60_000;
  assert.equal(backoff.attempt('198.51.100.1', true, now), 'admitted');
  assert.equal(backoff.attempt('198.51.100.1', false, now), 'wrong', 'the count started over');
  assert.equal(backoff.waitFor('198.51.100.1', now), 0);
});

test('wrong passwords further apart than the longest wait are not a run; 0 turns the backoff off', () => {
  const backoff = new AuthBackoff(2);
  backoff.attempt('198.51.100.1', false, 0);
  backoff.attempt('198.51.100.1', false, 31 * 60_000);
  assert.equal(backoff.waitFor('198.51.100.1', 31 * 60_000), 0);
  const off = new AuthBackoff(0);
  for (let i = 0; i < 100; i++) off.attempt('198.51.100.1', false, 0);
  assert.equal(off.attempt('198.51.100.1', true, 0), 'admitted');
});

test('bounded: past its addresses the one heard from longest ago is forgotten', () => {
  const backoff = new AuthBackoff(1, 3);
  for (const address of ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4']) backoff.attempt(address, false, 0);
  assert.equal(backoff.waitFor('198.51.100.1', 0), 0, 'forgotten');
  for (const address of ['198.51.100.2', '198.51.100.3', '198.51.100.4']) assert.equal(backoff.waitFor(address, 0), 30_000);
});

test("callers: an address that guessed wrong is refused whatever the user and password; the user's phone elsewhere is admitted; unknown names count as wrong", async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const auth = new DigestAuth(new Map([['alice', 's3cret'], ['bob', 'hunter2']]));
  const policy = { trusted: undefined, auth, authAttempts: new AuthBackoff(5) };
  let calls = 0;
  const verdict = (address: string, user: string, password: string) => callerAdmission(policy, invite(auth, address, `call-${++calls}`, { user, password }), address);
  const guesser = '198.51.100.1';
  // Four guesses for alice and one made-up name, each refused as wrong (403, not challenged again).
  for (let i = 1; i <= 4; i++) assert.equal(await verdict(guesser, 'alice', `guess${i}`), 'wrong');
  assert.equal(await verdict(guesser, 'mallory', 'x'), 'wrong');
  assert.equal(await verdict(guesser, 'alice', 's3cret'), 'backoff', 'even the right password waits');
  assert.equal(await verdict(guesser, 'bob', 'hunter2'), 'backoff', 'for any user');
  assert.equal(await verdict('203.0.113.9', 'alice', 's3cret'), 'admitted', "alice's phone is not held");
  // Without credentials it is challenged as anyone is.
  assert.equal(await callerAdmission(policy, invite(auth, guesser, 'call-x'), guesser), 'challenge');
  t.mock.timers.tick(30_000);
  assert.equal(await verdict(guesser, 'alice', 's3cret'), 'admitted');
  // The count started over: four more wrong ones are not yet held.
  for (let i = 0; i < 4; i++) assert.equal(await verdict(guesser, 'alice', 'wrong'), 'wrong');
  assert.equal(await verdict(guesser, 'alice', 's3cret'), 'admitted');
});

test('callers: a used answer is stale for its address; a stale answer with a wrong password is counted wrong', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const auth = new DigestAuth(new Map([['alice', 's3cret']]));
  const policy = { trusted: undefined, auth, authAttempts: new AuthBackoff(1) };
  const request = invite(auth, '198.51.100.1', 'call-1', { user: 'alice', password: 's3cret' });
  assert.equal(await callerAdmission(policy, request, '198.51.100.1'), 'admitted');
  assert.equal(await callerAdmission(policy, request, '198.51.100.1'), 'stale');
  assert.equal(await callerAdmission(policy, request, '198.51.100.2'), 'challenge', 'from elsewhere it proves nothing');
  t.mock.timers.tick(60_000);
  const wrong = invite(auth, '198.51.100.1', 'call-2', { user: 'alice', password: 'guess' });
  t.mock.timers.tick(60_000);
  assert.equal(await callerAdmission(policy, wrong, '198.51.100.1'), 'wrong', 'an old nonce: still counted');
  assert.equal(await callerAdmission(policy, request, '198.51.100.1'), 'backoff');
});
