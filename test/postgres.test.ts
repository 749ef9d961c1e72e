// The same service on PostgreSQL (DATABASE_URL=postgres://…), two nodes sharing one store.
// Needs PostgreSQL on 127.0.0.1:5432 with trust auth and Redis on 127.0.0.1:6379
// (scripts/setup.sh --test installs and starts both where missing).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { openCall } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `parley_test_${randomBytes(4).toString('hex')}`;
const shared = {
  API_KEY_PEPPER: randomBytes(32).toString('hex'),
  TURN_SECRETS: randomBytes(24).toString('hex'),
  // A long cache TTL: only the Redis notice can make a revocation visible at once.
  KEY_CACHE_TTL_MS: '60000',
  REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
};
let nodeA: RunningServer;
let nodeB: RunningServer;

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

before(async () => {
  await admin((c) => c.query(`CREATE DATABASE ${dbName}`));
  const url = ADMIN_URL.replace(/\/[^/]*$/, `/${dbName}`);
  nodeA = await startServer({ ...shared, DATABASE_URL: url });
  nodeB = await startServer({ ...shared, DATABASE_URL: url, CREATE_DEV_KEY: 'false' });
});
after(async () => {
  await nodeA?.stop();
  await nodeB?.stop();
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
});

test('a token from one node works on the other; keys are hashed in PostgreSQL', async () => {
  const token = await mintToken(nodeA.baseUrl, nodeA.devKey);
  assert.equal((await http(nodeB.baseUrl, '/v1/realtime/ice-config', { token })).status, 200);
  const rows = await admin(async (c) => {
    const url = ADMIN_URL.replace(/\/[^/]*$/, `/${dbName}`);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      return (await db.query('SELECT key_hash, prefix FROM api_keys')).rows;
    } finally {
      await db.end();
    }
  });
  assert.equal(rows.length, 1);
  assert.notEqual(rows[0].key_hash, nodeA.devKey);
  assert.match(rows[0].key_hash, /^[0-9a-f]{64}$/);
});

test('a revocation through one node’s CLI reaches the other node at once (Redis)', async () => {
  const created = await nodeB.cli('keys', 'create', '--name', 'pg-key');
  const key = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
  const id = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
  const token = await mintToken(nodeA.baseUrl, key);
  assert.equal((await http(nodeB.baseUrl, '/v1/realtime/ice-config', { token })).status, 200);
  const revoked = await nodeA.cli('keys', 'revoke', id);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(revoked.stderr, '', 'the notice went out through Redis');
  // At once: well within the key cache's TTL, which is what the other node would wait without the notice.
  const refused = await until('node B to refuse the token', async () => (await http(nodeB.baseUrl, '/v1/realtime/ice-config', { token })).status, (s) => s !== 200, 2000);
  assert.equal(refused, 401);
});

test('a call on PostgreSQL answers and connects', async () => {
  const token = await mintToken(nodeB.baseUrl, nodeA.devKey);
  const client = await openCall(nodeB.baseUrl, token, { params: {} });
  try {
    await client.waitConnected();
    assert.match(client.conversationId, /^conv_/);
  } finally {
    client.close();
  }
});
