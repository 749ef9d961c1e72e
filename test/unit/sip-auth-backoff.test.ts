// Per-user backoff of wrong SIP digest passwords: refused after N wrong ones in a row whatever the
// source, for a wait that doubles with each further wrong one; the right password once the wait is
// over starts the count over; made-up user names cost nothing.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { AuthBackoff } from '../../src/sip/authBackoff.ts';
import { callerAdmission } from '../../src/sip/callerAdmission.ts';
import { DigestAuth } from '../../src/sip/digest.ts';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/** An Authorization header answering `auth`'s challenge as `user` with `password`. */
function answer(auth: DigestAuth, user: string, password: string): string {
  const nonce = /nonce="([^"]+)"/.exec(auth.challenge())![1]!;
  const response = md5(`${md5(`${user}:parley:${password}`)}:${nonce}:00000001:xyz:auth:${md5('INVITE:sip:agent@h')}`);
  return `Digest username="${user}", realm="parley", nonce="${nonce}", uri="sip:agent@h", response="${response}", qop=auth, nc=00000001, cnonce="xyz", algorithm=MD5`;
}

test('after N wrong passwords the user waits 30 s, then twice as long after each further wrong one, up to 30 minutes', () => {
  const backoff = new AuthBackoff(3);
  const t0 = 1_000_000;
  backoff.failed('alice', t0);
  backoff.failed('alice', t0);
  assert.equal(backoff.waitFor('alice', t0), 0, 'two wrong passwords: no wait yet');
  backoff.failed('alice', t0);
  assert.equal(backoff.waitFor('alice', t0), 30_000);
  assert.equal(backoff.waitFor('alice', t0 + 30_000), 0, 'the wait is over');
  backoff.failed('alice', t0 + 30_000);
  assert.equal(backoff.waitFor('alice', t0 + 30_000), 60_000);
  let now = t0 + 90_000;
  for (let i = 0; i < 20; i++) backoff.failed('alice', (now += 1000));
  assert.equal(backoff.waitFor('alice', now), 30 * 60_000, 'capped');
  assert.equal(backoff.waitFor('bob', now), 0, 'another user is not held');
  backoff.succeeded('alice');
  assert.equal(backoff.waitFor('alice', now), 0);
});

test('wrong passwords further apart than the longest wait are not a run', () => {
  const backoff = new AuthBackoff(2);
  backoff.failed('alice', 0);
  backoff.failed('alice', 31 * 60_000);
  assert.equal(backoff.waitFor('alice', 31 * 60_000), 0);
});

test('0 turns the backoff off', () => {
  const backoff = new AuthBackoff(0);
  for (let i = 0; i < 100; i++) backoff.failed('alice', 0);
  assert.equal(backoff.waitFor('alice', 0), 0);
});

test('callers: a user past its wrong passwords is refused whatever its source and password; the right one after the wait admits and resets', (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  const auth = new DigestAuth(new Map([['alice', 's3cret'], ['bob', 'hunter2']]));
  const policy = { trusted: undefined, auth, authBackoff: new AuthBackoff(5) };
  const verdict = (address: string, user: string, password: string) => callerAdmission(policy, address, answer(auth, user, password), 'INVITE');
  // Five guesses from five addresses, each refused as wrong (403, not challenged again).
  for (let i = 1; i <= 5; i++) assert.equal(verdict(`198.51.100.${i}`, 'alice', `guess${i}`), 'wrong');
  assert.equal(verdict('203.0.113.9', 'alice', 'guess6'), 'backoff');
  assert.equal(verdict('203.0.113.9', 'alice', 's3cret'), 'backoff', 'even the right password waits');
  assert.equal(verdict('203.0.113.9', 'bob', 'hunter2'), 'admitted', 'another user is not held');
  // Made-up names are challenged, and never held (no state is kept for them).
  for (let i = 0; i < 10; i++) assert.equal(verdict('198.51.100.1', 'mallory', 'x'), 'challenge');
  t.mock.timers.tick(30_000);
  assert.equal(verdict('203.0.113.9', 'alice', 's3cret'), 'admitted');
  // The count started over: four more wrong ones are not yet held.
  for (let i = 0; i < 4; i++) assert.equal(verdict('198.51.100.1', 'alice', 'wrong'), 'wrong');
  assert.equal(verdict('198.51.100.1', 'alice', 's3cret'), 'admitted');
});
