// Bad or slow HTTP input is answered as specified, never with a 5xx or a crash: slow bodies and
// slow headers (408), oversized bodies that clients can read (413), JSON nested too deep (422),
// wrong methods on parametric paths (405), tokens whose signing key is gone (401), and a node
// draining for shutdown (503, not a refused connection).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SQLite } from '../src/storage/sqliteDriver.ts';
import { openCall } from './helpers/rtcClient.ts';
import { startTestRedis, type TestRedis } from './helpers/redis.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/** Opens a raw connection to the server. */
function rawConnection(baseUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection. */
function readUntilClosed(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (d) => (text += d));
    socket.on('error', () => {});
    socket.once('close', () => resolve(text));
  });
}

describe('HTTP limits', () => {
  let server: RunningServer;
  let token: string;
  before(async () => {
    server = await startServer({ HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '3000' });
    token = await mintToken(server.baseUrl, server.devKey);
  });
  after(async () => {
    await server?.stop();
  });

  test('a body that never arrives in full gets 408 in Shape A once HTTP_REQUEST_TIMEOUT_MS has passed', async () => {
    const socket = await rawConnection(server.baseUrl);
    const answer = readUntilClosed(socket);
    socket.write(`POST /v1/realtime/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 408 /);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /not received in time/);
  });

  test('slowloris: connections trickling headers are cut at HTTP_HEADERS_TIMEOUT_MS while others are served', async () => {
    const slow = await Promise.all(Array.from({ length: 30 }, () => rawConnection(server.baseUrl)));
    const closed = slow.map(readUntilClosed);
    const header = 'GET /v1/realtime/models HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(200);
    let sent = 0;
    const trickle = setInterval(() => {
      for (const s of slow) if (!s.destroyed) s.write(header[sent % header.length]!);
      sent++;
    }, 100);
    try {
      for (let i = 0; i < 5; i++) assert.equal((await http(server.baseUrl, '/v1/realtime/models', { token })).status, 200);
      const answers = await Promise.all(closed);
      assert.ok(answers.every((a) => a.startsWith('HTTP/1.1 408 ')), 'every trickling connection got 408 and was closed');
    } finally {
      clearInterval(trickle);
    }
    assert.equal((await http(server.baseUrl, '/v1/realtime/models', { token })).status, 200);
  });

  test("a 14 MB POST from Node's fetch reads its 413 in 20 of 20 tries", async () => {
    const body = Buffer.alloc(14 * 1024 * 1024, 'a');
    const statuses: (number | string)[] = [];
    for (let i = 0; i < 20; i++) {
      try {
        const r = await fetch(server.baseUrl + '/v1/realtime/calls', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        });
        const answer = (await r.json()) as { error: { message: string } };
        assert.match(answer.error.message, /256 KiB/);
        statuses.push(r.status);
      } catch (err) {
        statuses.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
      }
    }
    assert.deepEqual(statuses, Array(20).fill(413));
  });

  test('JSON nested deeper than 32 levels is 422 json_invalid (recursion limit), logged, on every JSON route', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    for (const [path, auth] of [
      ['/v1/realtime/calls', token],
      ['/v1/realtime/client-secrets', server.devKey],
    ] as const) {
      for (const raw of [`{"offer":${deep(10_000)},"params":{}}`, deep(100_000), `{"params":${'{"a":'.repeat(40)}1${'}'.repeat(40)}}`]) {
        const r = await http(server.baseUrl, path, { method: 'POST', token: auth, rawBody: raw, headers: { 'content-type': 'application/json' } });
        assert.equal(r.status, 422, `${path}: ${JSON.stringify(r.body).slice(0, 200)}`);
        assert.equal(r.body.detail.length, 1);
        assert.deepEqual({ ...r.body.detail[0], loc: r.body.detail[0].loc[0] }, { type: 'json_invalid', loc: 'body', msg: 'JSON decode error', input: {}, ctx: { error: 'recursion limit exceeded' } });
        assert.equal(typeof r.body.detail[0].loc[1], 'number');
      }
    }
    // 32 levels are fine as JSON (and then validated as usual).
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, rawBody: `{"offer":{},"params":${'{"a":'.repeat(30)}1${'}'.repeat(30)}}` });
    assert.equal(r.status, 422);
    assert.notEqual(r.body.detail[0].type, 'json_invalid');
    await until('the log line', () => server.stderr(), (text) => /request body nested too deep/.test(text));
    assert.doesNotMatch(server.stderr(), /unhandled error/);
  });

  test('a wrong method on a parametric path is 405 with Allow; an unknown path stays 404', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await http(server.baseUrl, '/v1/realtime/conversations/conv_x', { method, token: server.devKey });
      assert.equal(r.status, 405, method);
      assert.deepEqual(r.body, { detail: 'Method Not Allowed' });
      assert.match(r.headers.get('allow') ?? '', /GET/);
    }
    assert.equal((await http(server.baseUrl, '/v1/realtime/conversations/conv_x/items', { token: server.devKey })).status, 404);
    assert.equal((await http(server.baseUrl, '/v1/realtime/calls', { method: 'DELETE', token })).status, 405);
  });
});

describe('a token whose signing key was deleted', () => {
  let redis: TestRedis;
  let server: RunningServer;
  before(async () => {
    redis = await startTestRedis();
    server = await startServer({ REDIS_URL: redis.url });
  });
  after(async () => {
    await server?.stop();
    await redis?.stop();
  });

  test('stops being accepted once the node reloads its keys, though it was verified (and cached) before', async () => {
    const token = await mintToken(server.baseUrl, server.devKey);
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token })).status, 200);
    const kid = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;
    // An operator deletes a compromised key from the store, then rotates (the rotation notice
    // makes every node reload its keys at once).
    const db = new SQLite(join(server.env.DATA_DIR!, 'parley.db'));
    try {
      db.prepare('DELETE FROM signing_keys WHERE kid = ?').run(kid);
    } finally {
      db.close();
    }
    const rotated = await server.cli('tokens', 'rotate-signing-key');
    assert.equal(rotated.code, 0, rotated.stderr);
    await until('the deleted key’s token to be refused', () => http(server.baseUrl, '/v1/realtime/ice-config', { token }), (r) => r.status === 401);
    assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token: await mintToken(server.baseUrl, server.devKey) })).status, 200);
  });
});

describe('the SIGTERM drain', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ SHUTDOWN_GRACE_MS: '3000' });
  });
  after(async () => {
    await server?.stop();
  });

  test('new requests get 503 until the port closes; a never-connected call is recorded failed', async () => {
    const apiKey = server.devKey;
    const token = await mintToken(server.baseUrl, apiKey);
    // The client never applies the answer: the call stays `connecting` on the server.
    const pending = await openCall(server.baseUrl, token, { withholdCandidates: true, params: { model: 'audio-echo' } });
    pending.close();
    const exited = new Promise<number | null>((resolve) => server.proc.once('exit', resolve));
    server.proc.kill('SIGTERM');
    const draining = await until('/readyz to say the node is shutting down', () => http(server.baseUrl, '/readyz'), (r) => r.status === 503 && r.body.checks.node.state === 'failed');
    assert.equal(draining.body.checks.node.state, 'failed');
    assert.equal((await http(server.baseUrl, '/healthz')).status, 200, 'still alive while draining');
    for (const [path, opts] of [
      ['/v1/realtime/client-secrets', { method: 'POST', token: apiKey }],
      ['/v1/realtime/ice-config', { token }],
      ['/v1/realtime/calls', { token, body: { offer: { sdp: pending.offerSdp, type: 'offer', candidates: [] }, params: {} } }],
      ['/no/such/path', {}],
    ] as const) {
      const r = await http(server.baseUrl, path, opts);
      assert.equal(r.status, 503, path);
      assert.equal(r.headers.get('retry-after'), '5', path);
      assert.equal(r.body.error.code, 'shutting_down', path);
    }
    assert.equal(await exited, 0);
    const again = await startServer({ DATA_DIR: server.env.DATA_DIR! });
    try {
      const rec = (await http(again.baseUrl, `/v1/realtime/conversations/${pending.conversationId}`, { token: apiKey })).body;
      assert.equal(rec.state, 'failed');
      assert.equal(rec.end_reason, 'server_shutdown');
    } finally {
      await again.stop();
    }
  });
});
