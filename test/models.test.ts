// The model catalogue through the public doors: a models file (MODELS_FILE) that offers one model to
// one API key only. The listing per key, and the 403 model_not_allowed of every door that names a
// model: the Orga calls request, OpenAI's client_secrets and its WebSocket, a session.update mid-call.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { PARLEY, http, mintToken, startServer, type RunningServer } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');
const run = promisify(execFile);

async function createKey(dataDir: string, name: string): Promise<{ id: string; key: string }> {
  const { stdout } = await run(process.execPath, [...PARLEY, 'keys', 'create', '--name', name], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' } });
  const id = /id:\s+(key_\w+)/.exec(stdout)?.[1];
  const key = /key:\s+(sk_parley_ai_\w+)/.exec(stdout)?.[1];
  assert.ok(id && key, stdout);
  return { id, key };
}

/** The status a WebSocket upgrade was answered with (101: it opened). */
function upgradeStatus(url: string, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolveStatus, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
    ws.on('open', () => {
      ws.close();
      resolveStatus({ status: 101, body: '' });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolveStatus({ status: res.statusCode ?? 0, body }));
    });
    ws.on('error', reject);
  });
}

describe('a model offered to one key only', () => {
  let server: RunningServer;
  let dataDir: string;
  let premiumKey: { id: string; key: string };
  let otherKey: { id: string; key: string };

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-models-'));
    premiumKey = await createKey(dataDir, 'premium');
    otherKey = await createKey(dataDir, 'other');
    const file = join(dataDir, 'models.yaml');
    writeFileSync(file, `default: parley-offline\nmodels:\n  - id: premium\n    kind: audio-echo\n    description: Only for the premium key.\n    keys: [${premiumKey.id}]\n`);
    server = await startServer({ DATA_DIR: dataDir, MODELS_FILE: file });
  });
  after(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('GET /v1/realtime/models lists what each key may use', async () => {
    const premium = await http(server.baseUrl, '/v1/realtime/models', { token: premiumKey.key });
    assert.equal(premium.status, 200);
    assert.equal(premium.body.default, 'parley-offline');
    assert.deepEqual(premium.body.models.find((m: any) => m.id === 'premium'), { id: 'premium', description: 'Only for the premium key.', kind: 'audio-echo', runs: 'premium', fallback: [] });
    const other = await http(server.baseUrl, '/v1/realtime/models', { token: await mintToken(server.baseUrl, otherKey.key) });
    assert.equal(other.status, 200);
    assert.deepEqual(other.body.models.map((m: any) => m.id), ['parley-offline', 'orga-1-beta', 'echo', 'audio-echo']);
  });

  test('the Orga calls request: 403 model_not_allowed for the other key, a call for the premium key', async () => {
    const refused = await openCall(server.baseUrl, await mintToken(server.baseUrl, otherKey.key), { params: { model: 'premium' } }).then(
      (c) => (c.close(), undefined),
      (err: { status?: number; body?: any }) => err,
    );
    assert.equal(refused?.status, 403);
    assert.equal(refused?.body.error.code, 'model_not_allowed');
    assert.match(refused?.body.error.message, /may not use the model premium/);
    const client: RtcClient = await openCall(server.baseUrl, await mintToken(server.baseUrl, premiumKey.key), { params: { model: 'premium' } });
    try {
      assert.match(client.conversationId, /^conv_/);
    } finally {
      client.close();
    }
  });

  test("OpenAI's client_secrets and WebSocket: 403 model_not_allowed for the other key", async () => {
    const secret = await http(server.baseUrl, '/v1/realtime/client_secrets', { token: otherKey.key, body: { session: { type: 'realtime', model: 'premium' } } });
    assert.equal(secret.status, 403);
    assert.equal(secret.body.error.code, 'model_not_allowed');
    assert.equal(secret.body.error.param, 'session.model');
    const allowed = await http(server.baseUrl, '/v1/realtime/client_secrets', { token: premiumKey.key, body: { session: { type: 'realtime', model: 'premium' } } });
    assert.equal(allowed.status, 200);
    const socketUrl = `${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=premium`;
    const upgrade = await upgradeStatus(socketUrl, otherKey.key);
    assert.equal(upgrade.status, 403, upgrade.body);
    assert.match(upgrade.body, /model_not_allowed/);
    assert.equal((await upgradeStatus(socketUrl, premiumKey.key)).status, 101);
  });

  test('a session.update to a model the key may not use is refused with an error event; the session stays', async () => {
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, otherKey.key), { params: { model: 'audio-echo' } });
    try {
      await client.waitChannelOpen(30_000);
      await client.nextEvent('session.created', 30_000);
      client.send({ type: 'session.update', session: { model: 'premium' } });
      const error = await client.nextEvent('error', 30_000);
      assert.equal(error.error.code, 'model_not_allowed');
      client.send({ type: 'session.update', session: { voice: 'Juan' } });
      const updated = await client.nextEvent('session.updated', 30_000);
      assert.equal(updated.session.model, 'audio-echo');
      assert.equal(updated.session.voice, 'Juan');
    } finally {
      client.close();
    }
  });
});
