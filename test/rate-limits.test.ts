// Rate limits through HTTP: client-secrets (both forms) per API key and per client address, calls
// (both forms) per token; 429 with Retry-After in Shape A (Orga) or OpenAI's error object. One node
// counts in memory; two nodes sharing PostgreSQL and Redis count together, and while Redis is away
// each node counts alone (never an error), sharing again once it is back.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { startTestPostgres, type TestPostgres } from './helpers/postgres.ts';
import { startTestRedis, type TestRedis } from './helpers/redis.ts';
import { http, metric, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

type Answer = Awaited<ReturnType<typeof http>>;

/** The servers here trust X-Forwarded-For from loopback, so a test can speak from any address. */
const LIMITS = { RATE_LIMIT_CLIENT_SECRETS_PER_KEY: '3', RATE_LIMIT_CLIENT_SECRETS_PER_IP: '3', RATE_LIMIT_CALLS_PER_TOKEN: '2', RATE_LIMIT_KEY_LOOKUPS_PER_IP: '3', RATE_LIMIT_WINDOW_SECONDS: '60', TRUST_PROXY: '127.0.0.1' };
const LIGHT = { TURN_ENABLED: 'false', STT_WORKERS: '1' };

/** Not a key of this server: 401, but counted against the client's address all the same. */
const WRONG_KEY = 'sk_parley_ai_' + 'x'.repeat(40);

let addresses = 0;
/** A client address no other request of this file used. */
const freshIp = () => `198.51.100.${++addresses}`;

function clientSecrets(server: RunningServer, key: string, ip = freshIp()): Promise<Answer> {
  return http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: key, headers: { 'x-forwarded-for': ip } });
}

async function token(server: RunningServer, key: string): Promise<string> {
  const r = await clientSecrets(server, key);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.ephemeral_token;
}

/**
 * An Orga calls request whose offer cannot be used (422): counted all the same, and nothing to hang
 * up. (A body that is not even of the right shape is refused before it counts.)
 */
const orgaCall = (server: RunningServer, tok: string) =>
  http(server.baseUrl, '/v1/realtime/calls', { token: tok, body: { offer: { sdp: 'not an offer', type: 'offer', candidates: [] }, params: {} } });

async function newKey(server: RunningServer, name: string): Promise<string> {
  const created = await server.cli('keys', 'create', '--name', name);
  return /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
}

function assertRateLimited(r: Answer, message: RegExp, windowSeconds = 60) {
  assert.equal(r.status, 429, JSON.stringify(r.body));
  assert.deepEqual(Object.keys(r.body), ['error']);
  assert.deepEqual(r.body.error, { message: r.body.error.message, type: 'invalid_request_error', param: null, code: 'rate_limit_exceeded' });
  assert.match(r.body.error.message, message);
  const retry = Number(r.headers.get('retry-after'));
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= windowSeconds, `Retry-After ${r.headers.get('retry-after')}`);
}

describe('one node without Redis', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ ...LIMITS, ...LIGHT });
  });
  after(async () => {
    await server?.stop();
  });

  test('client-secrets per API key: the 4th in the window is 429 (Shape A, Retry-After); other keys go on', async () => {
    const key = await newKey(server, 'limited');
    for (let i = 0; i < 3; i++) assert.equal((await clientSecrets(server, key)).status, 200);
    assertRateLimited(await clientSecrets(server, key), /API key.*limit: 3 per 60 s/);
    assert.equal((await clientSecrets(server, server.devKey)).status, 200, 'another key');
    assertRateLimited(await clientSecrets(server, key), /API key/);
    assert.equal(await metric(server.baseUrl, 'parley_rate_limited_total{limit="cs-key"}'), 2);
  });

  test('client-secrets per client address, wrong keys included; other addresses go on', async () => {
    const ip = freshIp();
    for (let i = 0; i < 3; i++) assert.equal((await clientSecrets(server, WRONG_KEY, ip)).status, 401);
    // Refused before the key is even looked at: guessing keys is limited too.
    assertRateLimited(await clientSecrets(server, server.devKey, ip), /address.*limit: 3 per 60 s/);
    assert.equal((await clientSecrets(server, server.devKey, freshIp())).status, 200, 'another address');
  });

  test('every other route that looks up a key counts per client address, wrong keys included', async () => {
    const ip = freshIp();
    const get = (path: string, key: string, from = ip) => http(server.baseUrl, path, { token: key, headers: { 'x-forwarded-for': from } });
    assert.equal((await get('/v1/realtime/voices', WRONG_KEY)).status, 401);
    assert.equal((await get('/v1/realtime/models', WRONG_KEY)).status, 401);
    assert.equal((await get('/v1/realtime/conversations/conv_nothing', WRONG_KEY)).status, 401);
    // Refused before the key is looked at.
    assertRateLimited(await get('/v1/realtime/voices', server.devKey), /address.*limit: 3 per 60 s/);
    const hangup = await http(server.baseUrl, '/v1/realtime/calls/conv_nothing/hangup', { method: 'POST', token: WRONG_KEY, headers: { 'x-forwarded-for': ip } });
    assert.equal(hangup.status, 429);
    assert.equal(hangup.body.error.code, 'rate_limit_exceeded');
    assert.equal((await get('/v1/realtime/voices', server.devKey, freshIp())).status, 200, 'another address');
  });

  test("the SIP routes count per client address too, wrong keys included: outbound calls, a ringing call's accept, reject and refer (OpenAI's 429)", async () => {
    const routes: [string, object][] = [
      ['/v1/realtime/sip/calls', { to: '+4930123456' }],
      ['/v1/realtime/calls/conv_nothing/accept', {}],
      ['/v1/realtime/calls/conv_nothing/reject', {}],
      ['/v1/realtime/calls/conv_nothing/refer', { target_uri: 'sip:someone@example.com' }],
    ];
    for (const [path, body] of routes) {
      const ip = freshIp();
      const post = (key: string, from = ip) => http(server.baseUrl, path, { token: key, body, headers: { 'x-forwarded-for': from } });
      for (let i = 0; i < 3; i++) assert.equal((await post(WRONG_KEY)).status, 401, path);
      // Refused before the key is looked at, in OpenAI's rate-limit error (these are OpenAI's routes).
      const limited = await post(server.devKey);
      assert.equal(limited.status, 429, `${path}: ${JSON.stringify(limited.body)}`);
      assert.deepEqual(limited.body, { error: { message: limited.body.error.message, type: 'requests', param: null, code: 'rate_limit_exceeded' } });
      assert.match(limited.body.error.message, /address.*limit: 3 per 60 s/);
      assert.ok(Number(limited.headers.get('retry-after')) >= 1, path);
      assert.notEqual((await post(server.devKey, freshIp())).status, 429, `${path}: another address`);
    }
  });

  test('calls per token, both forms: the 3rd is 429 (Shape A for Orga, OpenAI error for SDP); other tokens go on', async () => {
    const key = await newKey(server, 'calls');
    const [orga, sdp, other] = [await token(server, key), await token(server, key), await token(server, key)];
    assert.equal((await orgaCall(server, orga)).status, 422);
    assert.equal((await http(server.baseUrl, '/v1/realtime/calls', { token: orga, body: {} })).status, 422);
    assert.equal((await orgaCall(server, orga)).status, 422, 'a malformed body was not counted');
    assertRateLimited(await orgaCall(server, orga), /ephemeral token.*limit: 2 per 60 s/);
    assert.equal((await orgaCall(server, other)).status, 422, 'another token');

    const sdpCall = () => http(server.baseUrl, '/v1/realtime/calls', { token: `ek_${sdp}`, rawBody: 'not an offer', headers: { 'content-type': 'application/sdp' } });
    for (let i = 0; i < 2; i++) assert.equal((await sdpCall()).status, 400);
    const limited = await sdpCall();
    assert.equal(limited.status, 429);
    assert.deepEqual(limited.body, { error: { message: limited.body.error.message, type: 'requests', param: null, code: 'rate_limit_exceeded' } });
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    // The token is counted once, whichever form it uses.
    assertRateLimited(await orgaCall(server, sdp), /ephemeral token/);
  });

  test("OpenAI's client_secrets: openai-node sees a RateLimitError (429, rate_limit_exceeded, Retry-After)", async () => {
    const key = await newKey(server, 'openai');
    const ip = freshIp();
    const client = new OpenAI({ apiKey: key, baseURL: `${server.baseUrl}/v1`, maxRetries: 0, defaultHeaders: { 'x-forwarded-for': ip } });
    for (let i = 0; i < 3; i++) assert.match((await client.realtime.clientSecrets.create({})).value, /^ek_/);
    await assert.rejects(client.realtime.clientSecrets.create({}), (err: any) => {
      assert.ok(err instanceof OpenAI.RateLimitError, String(err));
      assert.equal(err.status, 429);
      assert.equal(err.code, 'rate_limit_exceeded');
      assert.equal(err.type, 'requests');
      assert.match(err.message, /address|API key/);
      assert.ok(Number(err.headers.get('retry-after')) >= 1);
      return true;
    });
  });
});

describe('two nodes sharing PostgreSQL and Redis', () => {
  let pg: TestPostgres;
  let redis: TestRedis;
  let nodeA: RunningServer;
  let nodeB: RunningServer;
  before(async () => {
    [pg, redis] = await Promise.all([startTestPostgres(), startTestRedis()]);
    const shared = {
      ...LIMITS,
      ...LIGHT,
      DATABASE_URL: pg.url,
      REDIS_URL: redis.url,
      API_KEY_PEPPER: randomBytes(32).toString('hex'),
      TURN_SECRETS: randomBytes(24).toString('hex'),
    };
    nodeA = await startServer({ ...shared, NODE_ID: 'rate-a' });
    nodeB = await startServer({ ...shared, NODE_ID: 'rate-b', CREATE_DEV_KEY: 'false' });
  });
  after(async () => {
    await nodeA?.stop();
    await nodeB?.stop();
    // Running unless a failed test left it stopped.
    await redis?.stop().catch(() => {});
    await pg?.destroy();
  });

  test('every limit counts across both nodes', async () => {
    const key = await newKey(nodeA, 'shared');
    assert.equal((await clientSecrets(nodeA, key)).status, 200);
    assert.equal((await clientSecrets(nodeA, key)).status, 200);
    assert.equal((await clientSecrets(nodeB, key)).status, 200);
    assertRateLimited(await clientSecrets(nodeB, key), /API key/);
    assertRateLimited(await clientSecrets(nodeA, key), /API key/);

    const ip = freshIp();
    for (const node of [nodeB, nodeA, nodeB]) assert.equal((await clientSecrets(node, WRONG_KEY, ip)).status, 401);
    assertRateLimited(await clientSecrets(nodeA, nodeA.devKey, ip), /address/);

    const tok = await token(nodeB, nodeA.devKey);
    assert.equal((await orgaCall(nodeA, tok)).status, 422);
    assert.equal((await orgaCall(nodeB, tok)).status, 422);
    assertRateLimited(await orgaCall(nodeA, tok), /ephemeral token/);

    // In Redis: prefixed keys that expire with their window, naming no address, key or token.
    const client = new Redis(redis.url);
    try {
      const keys = await client.keys('parley:rl:*');
      assert.ok(keys.some((k) => k.startsWith('parley:rl:cs-key:')) && keys.some((k) => k.startsWith('parley:rl:calls-token:')), keys.join(' '));
      const claims = JSON.parse(Buffer.from(tok.split('.')[1]!, 'base64url').toString());
      for (const k of keys) {
        assert.ok(!k.includes(ip) && !k.includes(claims.jti) && !k.includes(claims.sub), k);
        const ttl = await client.pttl(k);
        assert.ok(ttl > 0 && ttl <= 60_000, `${k} expires within the window (${ttl} ms)`);
      }
    } finally {
      client.disconnect();
    }
  });

  test('Redis away: each node counts alone (no error, one warning); Redis back: counted together again', async () => {
    await redis.stop();
    const ip = freshIp();
    const answers: number[] = [];
    for (const node of [nodeA, nodeA, nodeA, nodeB, nodeB, nodeB]) answers.push((await clientSecrets(node, WRONG_KEY, ip)).status);
    assert.deepEqual(answers, [401, 401, 401, 401, 401, 401], 'three per node: each counts its own');
    assertRateLimited(await clientSecrets(nodeA, WRONG_KEY, ip), /address/);
    assertRateLimited(await clientSecrets(nodeB, WRONG_KEY, ip), /address/);
    const tok = await token(nodeA, nodeA.devKey);
    for (let i = 0; i < 2; i++) assert.equal((await orgaCall(nodeA, tok)).status, 422);
    assertRateLimited(await orgaCall(nodeA, tok), /ephemeral token/);
    for (const node of [nodeA, nodeB]) {
      await until('the outage warning', () => node.stderr(), (err) => /Redis unreachable: rate limits/.test(err));
      assert.equal(node.stderr().match(/Redis unreachable: rate limits/g)!.length, 1, 'one warning per outage');
    }

    await redis.start();
    // Each attempt from a fresh address: three on A, then B refuses only if both count in Redis.
    await until(
      'both nodes to count in Redis again',
      async () => {
        const from = freshIp();
        for (let i = 0; i < 3; i++) assert.equal((await clientSecrets(nodeA, WRONG_KEY, from)).status, 401);
        return (await clientSecrets(nodeB, WRONG_KEY, from)).status;
      },
      (status) => status === 429,
    );
    const again = await newKey(nodeB, 'after-outage');
    for (const node of [nodeB, nodeA, nodeB]) assert.equal((await clientSecrets(node, again)).status, 200);
    assertRateLimited(await clientSecrets(nodeA, again), /API key/);
    for (const node of [nodeA, nodeB]) {
      assert.equal(node.proc.exitCode, null, 'the same process throughout');
      assert.doesNotMatch(node.stderr(), /unhandled error/);
    }
  });
});
