// A node dies mid-call (kill -9): its calls' records must not stay `active`. Restarted on the same
// store, the node records its earlier incarnation's calls failed at once (and sends their
// call.failed webhooks, which the dead process never could); on a shared PostgreSQL, the other
// nodes do it once the dead node has been silent for NODE_LOST_AFTER_MS.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { scratchDatabase } from './helpers/postgres.ts';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { clusterEnv, http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.ts';

const record = async (server: RunningServer, apiKey: string, id: string) =>
  (await http(server.baseUrl, `/v1/realtime/conversations/${id}`, { token: apiKey })).body;

async function connectedCall(server: RunningServer, apiKey: string): Promise<RtcClient> {
  const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, apiKey), { params: { model: 'audio-echo' } });
  try {
    await client.waitConnected();
    await until('the call recorded active', () => record(server, apiKey, client.conversationId), (r) => r.state === 'active');
    return client;
  } catch (err) {
    client.close();
    throw err;
  }
}

describe('a single node (SQLite) killed mid-call and started again', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-reconcile-'));
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let receiver: WebhookReceiver;
  let server: RunningServer;
  before(async () => {
    receiver = await startWebhookReceiver(secret);
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('the call left active by the killed process is recorded failed (node_lost) at the next start, and its call.failed sent', async () => {
    const hooks = { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret, WEBHOOK_POLL_MS: '100', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' };
    server = await startServer({ DATA_DIR: dataDir, ...hooks });
    const apiKey = server.devKey;
    const client = await connectedCall(server, apiKey);
    await server.stop('SIGKILL');
    client.close();
    server = await startServer({ DATA_DIR: dataDir, ...hooks });
    const rec = await record(server, apiKey, client.conversationId);
    assert.equal(rec.state, 'failed', 'recorded before the node answers its first request');
    assert.equal(rec.end_reason, 'node_lost');
    assert.ok(rec.ended_at);
    await until('the log line', () => server.stderr(), (text) => /calls left unfinished by this node's previous run recorded failed/.test(text));
    const failed: any = await until('its call.failed', () => receiver.events.find((e) => e.type === 'call.failed' && e.data.call_id === client.conversationId), Boolean, 15_000);
    assert.equal(failed.data.end_reason, 'node_lost');
    assert.equal(failed.data.state, 'failed');
    assert.equal(failed.data.transport, 'webrtc');
    assert.ok(failed.data.connected_at > 0 && failed.data.duration_s >= 0, JSON.stringify(failed.data));
    assert.equal(failed.data.quality, null, 'its figures died with the process');
    assert.equal(receiver.events.filter((e) => e.type === 'call.failed' && e.data.call_id === client.conversationId).length, 1);
  });
});

describe('two nodes on one PostgreSQL, one killed mid-call', () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>;
  const LOST_AFTER_MS = 3000;
  let nodeA: RunningServer;
  let nodeB: RunningServer;

  before(async () => {
    database = await scratchDatabase('parley_reconcile');
    const shared = clusterEnv({ databaseUrl: database.url, lostAfterMs: LOST_AFTER_MS });
    nodeA = await startServer(shared);
    nodeB = await startServer({ ...shared, CREATE_DEV_KEY: 'false' });
  });
  after(async () => {
    await nodeA?.stop();
    await nodeB?.stop();
    await database?.drop();
  });

  test("the survivor records the dead node's call failed (node_lost) and leaves its own alone", async (t) => {
    const apiKey = nodeA.devKey;
    const onA = await connectedCall(nodeA, apiKey);
    let onB: RtcClient | undefined;
    try {
      onB = await connectedCall(nodeB, apiKey);
      await nodeA.stop('SIGKILL');
      const killedAt = Date.now();
      // The bound: silent for NODE_LOST_AFTER_MS, then at most one heartbeat and the sweep.
      const rec = await until('the dead node’s call to be reconciled', () => record(nodeB, apiKey, onA.conversationId), (r) => r.state !== 'active', LOST_AFTER_MS * 4);
      assert.equal(rec.state, 'failed');
      assert.equal(rec.end_reason, 'node_lost');
      t.diagnostic(`node_lost recorded ${Date.now() - killedAt} ms after kill -9 (NODE_LOST_AFTER_MS=${LOST_AFTER_MS}, heartbeat 500 ms)`);
      assert.equal((await record(nodeB, apiKey, onB.conversationId)).state, 'active', 'the live node’s call is untouched');
      assert.equal(onB.pc.connectionState, 'connected');
    } finally {
      onA.close();
      onB?.close();
    }
  });
});
