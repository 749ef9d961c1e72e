// Two nodes on loopback sharing PostgreSQL and Redis. Node A, at its call limit, passes a call to B:
// the client gets one ordinary answer (B's, with B's candidates) and the call connects with audio,
// in both wire forms; a hang-up sent to A reaches the call on B. Then A is killed with SIGKILL and B
// records A's calls failed (node_lost) within the bound.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openAiStylePeer } from './helpers/openaiPeer.ts';
import { attachTone, listen, openCall, waitFor, type RtcClient } from './helpers/rtcClient.ts';
import { http, mintToken, type RunningServer } from './helpers/server.ts';
import { startTwoNodes, type TwoNodes } from './helpers/twoNodes.ts';
import { until } from './helpers/wait.ts';
import WebSocket from 'ws';

const LOST_AFTER_MS = 3000;

/** The UDP ports of the host candidates in an SDP. */
const candidatePorts = (sdp: string) => [...sdp.matchAll(/a=candidate:\S+ \d \S+ \d+ \S+ (\d+) typ host/g)].map((m) => Number(m[1]));

describe('two nodes sharing PostgreSQL and Redis', () => {
  let cluster: TwoNodes;
  let nodeA: RunningServer;
  let nodeB: RunningServer;
  const clients: RtcClient[] = [];
  let onA: RtcClient;

  before(async () => {
    cluster = await startTwoNodes('parley_nodes', { lostAfterMs: LOST_AFTER_MS, a: { MAX_CONCURRENT_CALLS: '1' } });
    ({ a: nodeA, b: nodeB } = cluster);
  });
  after(async () => {
    for (const c of clients) c.close();
    await cluster?.stop();
  });

  const record = async (node: RunningServer, id: string) => (await http(node.baseUrl, `/v1/realtime/conversations/${id}`, { token: nodeA.devKey })).body;

  test('A answers its first call itself', async () => {
    onA = await openCall(nodeA.baseUrl, await mintToken(nodeA.baseUrl, nodeA.devKey), { params: { model: 'audio-echo' } });
    clients.push(onA);
    assert.equal(onA.answeredBy, 'node-a');
    await onA.waitConnected();
  });

  test("a sideband connection opened on B to A's call is relayed to A: it hears and steers the call", async () => {
    const url = `${nodeB.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${onA.conversationId}`;
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${nodeA.devKey}` } });
    const events: any[] = [];
    socket.on('message', (data) => events.push(JSON.parse(String(data))));
    // Sent at once: what the app says before A answers the relay waits for it.
    socket.on('open', () => socket.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'Relayed through B.' } })));
    try {
      const updated: any = await until('session.updated through B', () => events.find((e) => e.type === 'session.updated'), Boolean, 15_000);
      assert.equal(updated.session.instructions, 'Relayed through B.');
      assert.ok(events.some((e) => e.type === 'session.created'), 'the call’s session.created, as on A');
    } finally {
      socket.close();
    }
    // A call nobody carries: refused before the upgrade, as on the carrying node.
    const unknown = new WebSocket(`${nodeB.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=conv_nosuchcall`, { headers: { authorization: `Bearer ${nodeA.devKey}` } });
    const status = await new Promise<number>((resolve) => unknown.on('unexpected-response', (_req, res) => resolve(res.statusCode!)));
    assert.equal(status, 404);
  });

  test("A's cap on the call's sidebands (MAX_SIDEBANDS_PER_CALL, 4) holds for sidebands relayed through B", async () => {
    const sideband = (node: RunningServer) =>
      new Promise<{ socket: WebSocket; first: any; closed: Promise<number> }>((resolve, reject) => {
        const socket = new WebSocket(`${node.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${onA.conversationId}`, { headers: { authorization: `Bearer ${nodeA.devKey}` } });
        const closed = new Promise<number>((r) => socket.on('close', r));
        socket.once('message', (data) => resolve({ socket, first: JSON.parse(String(data)), closed }));
        socket.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
      });
    const kept: Awaited<ReturnType<typeof sideband>>[] = [];
    // Until the previous test's sideband is gone from A too (its close crosses B first).
    const keep = (node: RunningServer) =>
      until('a sideband kept', () => sideband(node), (s) => {
        if (s.first.type === 'session.created') return true;
        s.socket.close();
        return false;
      });
    for (const node of [nodeA, nodeB, nodeA, nodeB]) kept.push(await keep(node));
    try {
      for (const node of [nodeB, nodeA]) {
        const refused = await sideband(node);
        assert.equal(refused.first.type, 'error');
        assert.equal(refused.first.error.code, 'too_many_sidebands');
        assert.equal(await refused.closed, 1000, 'closed as the carrying node closed it');
      }
    } finally {
      for (const s of kept) s.socket.close();
    }
  });

  test('at its limit, A passes the next call (Orga form) to B: it connects and echoes audio', async () => {
    const client = await openCall(nodeA.baseUrl, await mintToken(nodeA.baseUrl, nodeA.devKey), { params: { model: 'audio-echo' } });
    clients.push(client);
    assert.equal(client.answeredBy, 'node-b');
    await client.waitConnected();
    const ear = listen(client);
    const stopTone = await attachTone(client);
    await until('echoed audio from B', () => ear.peakRms(), (rms) => rms > 1000);
    stopTone();
    ear.stop();
    // The answer is B's: A's call and this one have no media port in common.
    const portsA = new Set(candidatePorts(onA.answerSdp));
    assert.ok(candidatePorts(client.answerSdp).length > 0);
    assert.ok(candidatePorts(client.answerSdp).every((p) => !portsA.has(p)));
    assert.equal((await record(nodeB, client.conversationId)).state, 'active');
    assert.match(await (await fetch(`${nodeA.baseUrl}/metrics`)).text(), /parley_calls_forwarded_total\{status="200",reason="full"\} 1/);
  });

  test("the OpenAI form is passed on too, and a hang-up sent to A ends the call on B", async () => {
    const token = await mintToken(nodeA.baseUrl, nodeA.devKey);
    const peer = await openAiStylePeer();
    try {
      const res = await fetch(`${nodeA.baseUrl}/v1/realtime/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/sdp' },
        body: peer.offerSdp,
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('x-parley-node'), 'node-b');
      const id = /\/v1\/realtime\/calls\/(conv_[^/]+)$/.exec(res.headers.get('location') ?? '')?.[1];
      assert.ok(id, 'Location names the call');
      await peer.pc.setRemoteDescription({ type: 'answer', sdp: await res.text() });
      await waitFor(() => peer.pc.connectionState === 'connected', (cb) => (peer.pc.onconnectionstatechange = cb), 10_000, 'connected');
      await peer.next('session.created');

      const hangup = await http(nodeA.baseUrl, `/v1/realtime/calls/${id}/hangup`, { method: 'POST', token: nodeA.devKey });
      assert.equal(hangup.status, 200);
      assert.equal(hangup.headers.get('x-parley-node'), 'node-b');
      const rec = await until('the call recorded ended', () => record(nodeA, id), (r) => r.state === 'ended');
      assert.equal(rec.end_reason, 'hangup_request');
    } finally {
      peer.pc.close();
    }
  });

  test('a client cannot stop the passing on: x-parley-forwarded-by is trusted only between nodes', async () => {
    const token = await mintToken(nodeA.baseUrl, nodeA.devKey);
    const client = await openCall(nodeA.baseUrl, token, { params: { model: 'audio-echo' }, headers: { 'x-parley-forwarded-by': 'node-x' } });
    clients.push(client);
    assert.equal(client.answeredBy, 'node-b');
    await client.waitConnected();
  });

  test("A killed with SIGKILL: B records A's call failed (node_lost) within the bound", async (t) => {
    await nodeA.stop('SIGKILL', { keepData: true });
    const killedAt = Date.now();
    const rec = await until("A's call reconciled", () => record(nodeB, onA.conversationId), (r) => r.state !== 'active', LOST_AFTER_MS * 4);
    assert.equal(rec.state, 'failed');
    assert.equal(rec.end_reason, 'node_lost');
    t.diagnostic(`node_lost recorded ${Date.now() - killedAt} ms after SIGKILL (NODE_LOST_AFTER_MS=${LOST_AFTER_MS}, heartbeat 500 ms)`);
    assert.equal((await record(nodeB, clients[1]!.conversationId)).state, 'active', "B's own call is untouched");
  });
});
