// Revoking a key ends its live calls within 2 s, with the end reason key_revoked the client reads
// in session.ended: on a single node without Redis (the watcher's poll), and on both nodes of a
// two-node cluster on PostgreSQL + Redis, whether the revocation comes from the CLI (a bus notice)
// or is written straight into the store (no notice: the poll). There, too, a caller at its own
// concurrent-call limit is refused (429) by a full node rather than passed to the other node.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { startTwoNodes, type TwoNodes } from './helpers/twoNodes.ts';

const BOUND_MS = 2000;

async function createKey(server: RunningServer, name: string): Promise<{ key: string; id: string }> {
  const created = await server.cli('keys', 'create', '--name', name);
  assert.equal(created.code, 0, created.stderr);
  return { key: /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!, id: /id:\s+(key_\w+)/.exec(created.stdout)![1]! };
}

/** A connected echo call whose data channel is open (so it will hear how the call ends). */
async function liveCall(baseUrl: string, key: string, clients: RtcClient[]): Promise<RtcClient> {
  const client = await openCall(baseUrl, await mintToken(baseUrl, key), { params: { model: 'audio-echo' } });
  clients.push(client);
  await client.waitConnected();
  await client.nextEvent('session.created');
  return client;
}

/** When the call hears its end (the promise starts listening now). */
const endHeard = (client: RtcClient) =>
  client.nextEvent('session.ended', 10_000).then((event) => ({ event, at: Date.now() }));

async function revokedAt(server: RunningServer, id: string): Promise<number> {
  const keys = JSON.parse((await server.cli('keys', 'list', '--json')).stdout) as { id: string; revoked_at: string | null }[];
  const at = keys.find((k) => k.id === id)?.revoked_at;
  assert.ok(at, `${id} is revoked`);
  return Date.parse(at);
}

describe('a single node without Redis', () => {
  let server: RunningServer;
  const clients: RtcClient[] = [];
  before(async () => {
    server = await startServer({});
  });
  after(async () => {
    for (const c of clients) c.close();
    await server?.stop();
  });

  test('revoking a key (CLI) ends its live call within 2 s (key_revoked); another key\'s call goes on', async (t) => {
    const doomed = await createKey(server, 'doomed');
    const call = await liveCall(server.baseUrl, doomed.key, clients);
    const other = await liveCall(server.baseUrl, server.devKey, clients);
    const heard = endHeard(call);
    const revoked = await server.cli('keys', 'revoke', doomed.id);
    assert.equal(revoked.code, 0, revoked.stderr);
    const { event, at } = await heard;
    assert.equal(event.reason, 'key_revoked');
    const ms = at - (await revokedAt(server, doomed.id));
    t.diagnostic(`call ended ${ms} ms after the revocation (no Redis: the poll)`);
    assert.ok(ms < BOUND_MS, `${ms} ms`);
    assert.equal(other.events.some((e) => e.type === 'session.ended'), false);
    assert.equal((await http(server.baseUrl, `/v1/realtime/conversations/${other.conversationId}`, { token: server.devKey })).body.state, 'active');
  });
});

describe('two nodes sharing PostgreSQL and Redis', () => {
  let cluster: TwoNodes;
  let nodeA: RunningServer;
  let nodeB: RunningServer;
  let tenant: { key: string; id: string };
  const clients: RtcClient[] = [];
  let onA: RtcClient;
  let onB: RtcClient;
  let otherOnB: RtcClient;

  before(async () => {
    cluster = await startTwoNodes('parley_revoke', { a: { MAX_CONCURRENT_CALLS: '1', MAX_CALLS_PER_KEY: '1' } });
    ({ a: nodeA, b: nodeB } = cluster);
    tenant = await createKey(nodeA, 'tenant');
  });
  after(async () => {
    for (const c of clients) c.close();
    await cluster?.stop();
  });

  test('a full node refuses a caller at its own limit (429) instead of passing it on; others are passed on', async () => {
    onA = await liveCall(nodeA.baseUrl, tenant.key, clients);
    assert.equal(onA.answeredBy, 'node-a');
    await assert.rejects(openCall(nodeA.baseUrl, await mintToken(nodeA.baseUrl, tenant.key), { params: { model: 'audio-echo' } }), (err: any) => {
      assert.equal(err.status, 429);
      assert.equal(err.body.error.code, 'rate_limit_exceeded');
      return true;
    });
    otherOnB = await liveCall(nodeA.baseUrl, nodeA.devKey, clients);
    assert.equal(otherOnB.answeredBy, 'node-b', 'another key is passed to B');
    onB = await liveCall(nodeB.baseUrl, tenant.key, clients);
    assert.equal(onB.answeredBy, 'node-b');
  });

  test('revoking the key (CLI) ends its calls on both nodes within 2 s; the other key\'s call goes on', async (t) => {
    const heard = [endHeard(onA), endHeard(onB)];
    const revoked = await nodeA.cli('keys', 'revoke', tenant.id);
    assert.equal(revoked.code, 0, revoked.stderr);
    const at = await revokedAt(nodeA, tenant.id);
    for (const [i, h] of heard.entries()) {
      const { event, at: endedAt } = await h;
      assert.equal(event.reason, 'key_revoked');
      t.diagnostic(`call on node ${i ? 'B' : 'A'} ended ${endedAt - at} ms after the revocation`);
      assert.ok(endedAt - at < BOUND_MS, `${endedAt - at} ms`);
    }
    assert.equal(otherOnB.events.some((e) => e.type === 'session.ended'), false);
    assert.equal((await http(nodeB.baseUrl, `/v1/realtime/conversations/${otherOnB.conversationId}`, { token: nodeA.devKey })).body.state, 'active');
  });

  test('a revocation written straight into the store (no notice) ends the calls too, by the poll', async (t) => {
    const quiet = await createKey(nodeA, 'quiet');
    const calls = [await liveCall(nodeA.baseUrl, quiet.key, clients), await liveCall(nodeB.baseUrl, quiet.key, clients)];
    assert.deepEqual(calls.map((c) => c.answeredBy), ['node-a', 'node-b']);
    const heard = calls.map(endHeard);
    const client = new pg.Client({ connectionString: cluster.databaseUrl });
    await client.connect();
    const at = Date.now();
    try {
      await client.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [new Date(at).toISOString(), quiet.id]);
    } finally {
      await client.end();
    }
    for (const [i, h] of heard.entries()) {
      const { event, at: endedAt } = await h;
      assert.equal(event.reason, 'key_revoked');
      t.diagnostic(`call on node ${i ? 'B' : 'A'} ended ${endedAt - at} ms after the store was written`);
      assert.ok(endedAt - at < BOUND_MS, `${endedAt - at} ms`);
    }
  });
});
