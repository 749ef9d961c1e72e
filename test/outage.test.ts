// A dependency goes away under a running node and comes back: the process stays up, what can be
// served from memory is served, the rest answers 503 with Retry-After, /readyz says which check
// failed, and everything works again without a restart. PostgreSQL and Redis are the test's own
// instances (the machine's are never stopped); SQLite is locked by another connection.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SQLite } from '../src/storage/sqliteDriver.ts';
import { openCall } from './helpers/rtcClient.ts';
import { startTestPostgres, type TestPostgres } from './helpers/postgres.ts';
import { startTestRedis, type TestRedis } from './helpers/redis.ts';
import { http, metric, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const record = (server: RunningServer, id: string) => http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: server.devKey });

function assertUnavailable(r: { status: number; headers: Headers; body: any }, what: string) {
  assert.equal(r.status, 503, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.headers.get('retry-after'), '5', what);
  assert.equal(r.body.error.type, 'invalid_request_error', what);
  assert.equal(r.body.error.code, 'store_unavailable', what);
  assert.doesNotMatch(r.body.error.message, /ECONN|127\.0\.0\.1|terminat/i, `${what}: no internal detail`);
}

describe('PostgreSQL stops and starts under a running node', () => {
  let pg: TestPostgres;
  let server: RunningServer;
  before(async () => {
    pg = await startTestPostgres();
    server = await startServer({ DATABASE_URL: pg.url, NODE_HEARTBEAT_MS: '500', NODE_LOST_AFTER_MS: '3000' });
  });
  after(async () => {
    await server?.stop();
    await pg?.destroy();
  });

  test('memory serves tokens and ice-config, the rest is 503 + Retry-After, and all recovers', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token })).status, 200);
    const call = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    const unknownKey = 'sk_parley_ai_' + 'x'.repeat(40);
    // A token naming a signing key this node has not loaded cannot be judged without the store.
    const [, payload, signature] = token.split('.');
    const otherKid = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: 'sk-rotated-elsewhere' })).toString('base64url')}.${payload}.${signature}`;
    try {
      await call.waitConnected();
      await call.nextEvent('session.created');
      await until('the call recorded active', () => record(server, call.conversationId), (r) => r.body.state === 'active');
      // Ready once every check is (speech engines may still be loading their models).
      await until('/readyz to be ready', () => http(server.baseUrl, '/readyz'), (r) => r.status === 200, 60_000);

      await pg.stop();
      const notReady = await until('/readyz to report the database', () => http(server.baseUrl, '/readyz'), (r) => r.status === 503);
      assert.equal(notReady.body.status, 'not_ready');
      assert.equal(notReady.body.checks.database.state, 'failed');
      assert.equal(notReady.body.checks.node.state, 'ready');

      // From memory: the key this node has seen, token minting, token checks, ice-config.
      const minted = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey });
      assert.equal(minted.status, 200, JSON.stringify(minted.body));
      assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token: minted.body.ephemeral_token })).status, 200);
      assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token })).status, 200);
      assert.equal((await http(server.baseUrl, '/v1/realtime/models', { token })).status, 200);
      assert.equal((await http(server.baseUrl, '/healthz')).status, 200, 'liveness is not readiness');

      // What needs the database: 503 with Retry-After, in Shape A.
      const offer = { sdp: call.offerSdp, type: 'offer', candidates: [] };
      assertUnavailable(await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer, params: {} } }), 'calls');
      assertUnavailable(await record(server, call.conversationId), 'conversation read');
      assertUnavailable(await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: unknownKey }), 'a key never seen');
      for (let i = 0; i < 2; i++) assertUnavailable(await http(server.baseUrl, '/v1/realtime/ice-config', { token: otherKid }), 'an unknown signing key');

      // The live call goes on, and its hang-up is kept until the database is back.
      call.send({ type: 'session.update', session: { voice: 'Juan' } });
      assert.equal((await call.nextEvent('session.updated')).session.voice, 'Juan');
    } finally {
      call.close();
    }
    await until('the hang-up to end the call', () => metric(server.baseUrl, 'parley_active_calls'), (n) => n === 0);

    await pg.start();
    await until('/readyz to be ready again', () => http(server.baseUrl, '/readyz'), (r) => r.status === 200);
    const rec = await until('the kept hang-up to be recorded', () => record(server, call.conversationId), (r) => r.status === 200 && r.body.state !== 'active');
    assert.equal(rec.body.state, 'ended');
    assert.equal(rec.body.end_reason, 'hangup');
    const unknownAfter = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: unknownKey });
    assert.equal(unknownAfter.status, 401, JSON.stringify(unknownAfter.body));
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token: otherKid })).status, 401);
    const again = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    try {
      await again.waitConnected();
    } finally {
      again.close();
    }
    assert.equal(server.proc.exitCode, null, 'the same process throughout');
    assert.doesNotMatch(server.stderr(), /"level":50.*unhandled error/, 'no request ended in a 500');
  });
});

describe('Redis stops and starts under a running node', () => {
  let redis: TestRedis;
  let server: RunningServer;
  before(async () => {
    redis = await startTestRedis();
    // A long cache: only Redis (or the resync after its outage) can make a revocation visible quickly.
    server = await startServer({ REDIS_URL: redis.url, KEY_CACHE_TTL_MS: '60000' });
  });
  after(async () => {
    await server?.stop();
    await redis?.stop();
  });

  test('everything is served during the outage; notices missed meanwhile are caught up on reconnect', async () => {
    const ready = await until('/readyz with Redis', () => http(server.baseUrl, '/readyz'), (r) => r.status === 200);
    assert.equal(ready.body.checks.redis.state, 'ready');
    const created = await server.cli('keys', 'create', '--name', 'outage');
    const key = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
    const id = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
    const token = await mintToken(server.baseUrl, key);
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token })).status, 200);

    await redis.stop();
    const notReady = await until('/readyz to report Redis', () => http(server.baseUrl, '/readyz'), (r) => r.status === 503);
    assert.equal(notReady.body.checks.redis.state, 'failed');
    assert.equal(notReady.body.checks.database.state, 'ready');
    // Nothing a client asks for needs Redis.
    const devToken = await mintToken(server.baseUrl, server.devKey);
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token: devToken })).status, 200);
    const call = await openCall(server.baseUrl, devToken, { params: { model: 'audio-echo' } });
    try {
      await call.waitConnected();
    } finally {
      call.close();
    }
    // A revocation during the outage cannot be announced; the CLI says so and still revokes.
    const revoked = await server.cli('keys', 'revoke', id);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stderr, /could not notify other nodes through Redis/);

    await redis.start();
    await until('/readyz to be ready again', () => http(server.baseUrl, '/readyz'), (r) => r.status === 200);
    // Well inside KEY_CACHE_TTL_MS: the reconnection itself reloaded the node's view.
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token })).status, 401);
    assert.equal(server.proc.exitCode, null, 'the same process throughout');
  });
});

describe('SQLite locked by another process', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server?.stop();
  });

  test('writes that cannot get the lock answer 503 + Retry-After (never 500); reads go on; the lock ends, writes work', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    const call = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    call.close();
    const lock = new SQLite(join(server.env.DATA_DIR!, 'parley.db'));
    try {
      lock.exec('BEGIN EXCLUSIVE');
      const offer = { sdp: call.offerSdp, type: 'offer', candidates: [] };
      assertUnavailable(await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer, params: {} } }), 'calls while locked');
      assert.equal((await record(server, call.conversationId)).status, 200, 'reads are not blocked (WAL)');
      assert.equal((await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey })).status, 200);
    } finally {
      lock.exec('COMMIT');
      lock.close();
    }
    const after = await openCall(server.baseUrl, token, { params: { model: 'audio-echo' } });
    after.close();
    assert.match(after.conversationId, /^conv_/);
    assert.doesNotMatch(server.stderr(), /unhandled error/);
  });
});
