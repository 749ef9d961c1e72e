// Per-key call limits counted across the nodes: two nodes sharing PostgreSQL and Redis, with
// MAX_CALLS_PER_KEY=2. One call on A and one on B spend the key's two places: a third is refused on
// either node, whatever its door (429, in each door's shape), until one ends. A node that dies stops
// counting once it is taken for lost (NODE_LOST_AFTER_MS), as its calls are recorded failed. Without
// Redis a node counts its own calls.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { http, metric, mintToken, type RunningServer } from './helpers/server.ts';
import { startTwoNodes, type TwoNodes } from './helpers/twoNodes.ts';
import { until } from './helpers/wait.ts';

/** Long enough that a busy machine does not let B's counts lapse while B still runs. */
const LOST_AFTER_MS = 10_000;

describe('per-key call limits across nodes', () => {
  let cluster: TwoNodes;
  let nodeA: RunningServer;
  let nodeB: RunningServer;
  const clients: RtcClient[] = [];

  const call = async (node: RunningServer) => {
    const client = await openCall(node.baseUrl, await mintToken(node.baseUrl, nodeA.devKey), { params: { model: 'audio-echo' } });
    clients.push(client);
    return client;
  };
  /** The calls request's refusal, or undefined when the call was admitted. */
  const refusal = (node: RunningServer) =>
    call(node).then(
      () => undefined,
      (err: any) => err as { status: number; body: any },
    );

  before(async () => {
    cluster = await startTwoNodes('parley_key_limits', { lostAfterMs: LOST_AFTER_MS, shared: { MAX_CALLS_PER_KEY: '2' } });
    ({ a: nodeA, b: nodeB } = cluster);
  });
  after(async () => {
    for (const c of clients) c.close();
    await cluster?.stop();
  });

  test('one call on A and one on B: a third is refused on either node, WebRTC or WebSocket (429)', async () => {
    const onA = await call(nodeA);
    const onB = await call(nodeB);
    assert.deepEqual([onA.answeredBy, onB.answeredBy], ['node-a', 'node-b']);
    await Promise.all([onA.waitConnected(), onB.waitConnected()]);

    const refused = await refusal(nodeA);
    assert.equal(refused?.status, 429, JSON.stringify(refused));
    assert.equal(refused.body.error.code, 'rate_limit_exceeded');
    assert.match(refused.body.error.message, /already has 2 calls across the cluster \(its limit\)/);

    const socket = new WebSocket(`${nodeB.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${nodeA.devKey}` } });
    const status = await new Promise<number>((resolve, reject) => {
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
      socket.on('open', () => resolve(101));
      socket.on('error', reject);
    });
    socket.terminate();
    assert.equal(status, 429);

    assert.match(await (await fetch(`${nodeA.baseUrl}/metrics`)).text(), /parley_rate_limited_total\{limit="calls-key"\} 1/);
    assert.match(await (await fetch(`${nodeB.baseUrl}/metrics`)).text(), /parley_rate_limited_total\{limit="calls-key"\} 1/);
    assert.equal(await metric(nodeA.baseUrl, 'parley_active_calls'), 1);
    assert.equal(await metric(nodeB.baseUrl, 'parley_active_calls'), 1);
  });

  test("once A's call ends, the key's next call is admitted, on B; then A refuses again", async () => {
    const hangup = await http(nodeA.baseUrl, `/v1/realtime/calls/${clients[0]!.conversationId}/hangup`, { method: 'POST', token: nodeA.devKey });
    assert.equal(hangup.status, 200, JSON.stringify(hangup.body));
    await until("A's call ended", () => metric(nodeA.baseUrl, 'parley_active_calls'), (n) => n === 0);
    const next = await call(nodeB);
    assert.equal(next.answeredBy, 'node-b');
    await next.waitConnected();
    assert.equal((await refusal(nodeA))?.status, 429);
  });

  test("B killed with the key's two calls: they stop counting once B is taken for lost, and A admits the key again", async () => {
    await nodeB.stop('SIGKILL');
    const admitted = await until('a call of the key admitted on A', () => refusal(nodeA), (r) => r === undefined, 6 * LOST_AFTER_MS);
    assert.equal(admitted, undefined);
    assert.equal(await metric(nodeA.baseUrl, 'parley_active_calls'), 1);
  });

  test("Redis stopped: A counts the key's calls alone (one warning), never an error for the caller", async () => {
    await cluster.redis.stop();
    try {
      const next = await call(nodeA);
      await next.waitConnected();
      const refused = await refusal(nodeA);
      assert.equal(refused?.status, 429, JSON.stringify(refused));
      const warnings = (nodeA.stdout() + nodeA.stderr()).match(/calls per key are counted by each node alone/g) ?? [];
      assert.equal(warnings.length, 1);
    } finally {
      await cluster.redis.start();
    }
  });
});

