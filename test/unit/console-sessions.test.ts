// The console's sessions: the admin token checked whatever its length, a session accepted until it
// expires, and refused when altered, forged or signed under another token; the cookie's attributes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConsoleSessions, SESSION_TTL_SECONDS, cookieValue, sessionCookie } from '../../src/http/console/consoleSessions.ts';

const TOKEN = 'unit-test-admin-token-0123456789abcdef';

test('only the admin token itself passes, whatever the length presented', () => {
  const sessions = new ConsoleSessions(TOKEN);
  assert.equal(sessions.isAdminToken(TOKEN), true);
  for (const other of ['', TOKEN.slice(0, -1), TOKEN + 'x', TOKEN.toUpperCase(), 'x'.repeat(1000)]) assert.equal(sessions.isAdminToken(other), false, other);
});

test('a session is valid until it expires; its id is its nonce', () => {
  const sessions = new ConsoleSessions(TOKEN);
  const now = Date.UTC(2026, 10, 25);
  const value = sessions.issue(now);
  const [expiry, nonce] = value.split('.');
  assert.deepEqual(sessions.sessionOf(value, now), { id: nonce, expiresAt: Number(expiry) });
  assert.notEqual(sessions.sessionOf(value, now + (SESSION_TTL_SECONDS - 1) * 1000), undefined);
  assert.equal(sessions.sessionOf(value, now + SESSION_TTL_SECONDS * 1000), undefined);
  assert.notEqual(sessions.issue(now), value, 'each login its own session');
});

test('an altered, forged or foreign session is refused', () => {
  const sessions = new ConsoleSessions(TOKEN);
  const now = Date.now();
  const [expiry, nonce, signature] = sessions.issue(now).split('.') as [string, string, string];
  const later = String(Number(expiry) + 86_400);
  for (const value of [
    `${later}.${nonce}.${signature}`,
    `${expiry}.${nonce.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}.${signature}`,
    `${expiry}.${nonce}.${'A'.repeat(43)}`,
    `${expiry}.${nonce}`,
    '',
    undefined,
    new ConsoleSessions(TOKEN + '-rotated').issue(now),
  ]) {
    assert.equal(sessions.sessionOf(value, now), undefined, String(value));
  }
});

test('the cookie: read from a Cookie header, set HttpOnly and SameSite=Strict on /console, Secure under TLS, cleared empty', () => {
  assert.equal(cookieValue('a=1; parley_console=abc.def; b=2', 'parley_console'), 'abc.def');
  assert.equal(cookieValue('xparley_console=1', 'parley_console'), undefined);
  assert.equal(cookieValue(undefined, 'parley_console'), undefined);
  assert.equal(sessionCookie('v', false), `parley_console=v; Path=/console; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; SameSite=Strict`);
  assert.equal(sessionCookie('v', true), `parley_console=v; Path=/console; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; SameSite=Strict; Secure`);
  assert.equal(sessionCookie('', false), 'parley_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict');
});
