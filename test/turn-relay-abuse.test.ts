// TURN relays cannot be abused: a credential lives no longer than its token plus a call's maximum
// duration, stops the moment its API key is revoked (while other keys' go on), holds at most
// TURN_USER_QUOTA relays, and cannot relay to denied addresses in any of their written forms.
// Parley's own coturn on loopback; no packet leaves the machine (CreatePermission sends nothing).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { allocateRelay, holdRelay } from './helpers/coturn.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

interface TurnEntry {
  urls: string[];
  username: string;
  credential: string;
}

async function turnOf(server: RunningServer, token: string): Promise<TurnEntry & { port: number; expiresAt: number }> {
  const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token });
  assert.equal(ice.status, 200);
  const turn = (ice.body.iceServers as TurnEntry[]).find((s) => s.username)!;
  return { ...turn, port: Number(/:(\d+)\?transport=udp/.exec(turn.urls.find((u) => u.includes('udp'))!)![1]), expiresAt: Number(turn.username.split(':')[0]) };
}

/** 0 when a relay was allocated (and released), else coturn's error code. */
const allocation = async (t: { port: number; username: string; credential: string }) => {
  const result = await allocateRelay({ port: t.port }, t.username, t.credential);
  return result.ok ? 0 : result.code;
};
// This server's quota is one relay per credential, released a moment after each check: a check
// right after another may be told 486 (quota), or 437 (allocation mismatch, should the system hand
// the new socket the old one's port) meanwhile, so waits look for another answer (0 or 401).
const allocates = async (t: { port: number; username: string; credential: string }) =>
  until('an answer other than the quota', () => allocation(t), (code) => code !== 486 && code !== 437);
const UNAUTHORIZED = 401;

describe('TURN relays tied to their token and key', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ CALL_MAX_DURATION_MS: '5000', TURN_USER_QUOTA: '1' });
  });
  after(async () => {
    await server.stop();
  });

  test("a 10 s token's credential lasts the token plus a call's maximum duration, and is refused after", async () => {
    const secret = await http(server.baseUrl, '/v1/realtime/client_secrets', { method: 'POST', token: server.devKey, body: { expires_after: { anchor: 'created_at', seconds: 10 } } });
    assert.equal(secret.status, 200);
    const mintedAt = Date.now() / 1000;
    const turn = await turnOf(server, secret.body.value);
    assert.ok(turn.expiresAt <= mintedAt + 10 + 5 + 1, `the credential expires at most 15 s on (${turn.expiresAt - mintedAt} s)`);
    assert.equal(await allocates(turn), 0);
    await until('the credential to be refused', () => allocation(turn), (code) => code === UNAUTHORIZED, 30_000);
    assert.ok(Date.now() / 1000 >= turn.expiresAt - 1, 'refused only once its window is over');
  });

  test('once its key is revoked, a credential allocates no more; another key’s still does', async () => {
    const created = await server.cli('keys', 'create', '--name', 'turn-revoked');
    const key = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
    const id = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
    const doomed = await turnOf(server, await mintToken(server.baseUrl, key));
    const other = await turnOf(server, await mintToken(server.baseUrl, server.devKey));
    assert.equal(await allocates(doomed), 0);
    assert.equal((await server.cli('keys', 'revoke', id)).code, 0);
    const revokedAt = Date.now();
    await until('the revoked key’s credential to be refused', () => allocation(doomed), (code) => code === UNAUTHORIZED, 5000);
    assert.ok(Date.now() - revokedAt < 5000);
    assert.equal(await allocates(other), 0, "another key's credential still allocates");
  });

  test('a credential holds at most TURN_USER_QUOTA relays at once', async () => {
    const turn = await turnOf(server, await mintToken(server.baseUrl, server.devKey));
    const first = await holdRelay(turn.port, turn.username, turn.credential);
    try {
      assert.equal(first.result.ok, true);
      const second = await holdRelay(turn.port, turn.username, turn.credential);
      try {
        assert.equal(second.result.ok, false, 'a second relay past the quota of 1 is refused');
        assert.equal(second.result.ok === false && second.result.code, 486, 'Allocation Quota Reached');
      } finally {
        await second.release();
      }
    } finally {
      await first.release();
    }
    assert.equal(await allocates(turn), 0, 'released, the credential allocates again');
  });

  test('relaying to denied addresses fails in every written form', async () => {
    const turn = await turnOf(server, await mintToken(server.baseUrl, server.devKey));
    const relay = await holdRelay(turn.port, turn.username, turn.credential);
    try {
      assert.equal(relay.result.ok, true);
      // A loopback bind relays to loopback (development): permission works at all.
      assert.equal(await relay.permit('127.0.0.1'), 0);
      // IPv4 peers: refused by the deny list (403 Forbidden).
      const deniedV4 = ['10.0.0.1', '100.64.0.1', '169.254.169.254', '192.0.2.1', '198.51.100.1', '172.16.0.1'];
      for (const peer of deniedV4) assert.equal(await relay.permit(peer), 403, `relaying to ${peer} is forbidden`);
      // IPv6 forms of those (and IPv6 ranges) from this IPv4 relay: refused too (443, family
      // mismatch); the deny list's IPv6 entries are checked in test/unit/turn-relay-config.test.ts.
      for (const peer of ['::ffff:127.0.0.1', '::127.0.0.1', '::ffff:0:127.0.0.1', 'fec0::1', '2001:db8::1', 'fd00::1', 'fe80::1']) {
        assert.notEqual(await relay.permit(peer), 0, `relaying to ${peer} is refused`);
      }
    } finally {
      await relay.release();
    }
  });
});
