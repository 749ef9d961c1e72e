// Placement by load: two nodes sharing PostgreSQL and Redis; node A takes no new calls above its
// load threshold, B has none (LOAD_THRESHOLD=0). A CPU burner on every core loads the machine: A's
// load figure rises past its threshold, its Opus encoders step their complexity down, /readyz says
// it takes no new calls, and the next WebRTC offer sent to A is answered by B (A passes it on, as a
// full node does), a WebSocket session opened on A is relayed to B (the client keeps its one
// connection), a SIP INVITE to A is redirected (302) to B's SIP door, and an outbound phone call asked
// of A is placed by B. A lone node beside them (its own store: no other node to place a call on)
// with LOAD_THRESHOLD unset is loaded past the default 0.75 too, and takes its call itself, degraded.
// With the burners gone A takes calls again and the complexity climbs back. Runs alone (it loads the
// machine on purpose), so not in scripts/test.mjs's PARALLEL_FILES.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { availableParallelism } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { freePort } from './helpers/baresip.ts';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { startSipPhone } from './helpers/sipPhone.ts';
import { http, metric, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { startTwoNodes, type TwoNodes } from './helpers/twoNodes.ts';
import { until } from './helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.ts';
import WebSocket from 'ws';

const WEBHOOK_SECRET = 'whsec_' + Buffer.from('placement-webhook-secret-32-byte').toString('base64');

/** High, so that a shared machine's other work does not keep A above it once the burners stop. */
const THRESHOLD = 0.9;

describe('placement by load', () => {
  let cluster: TwoNodes;
  let hooks: WebhookReceiver;
  let nodeA: RunningServer;
  let nodeB: RunningServer;
  /** A node alone in its registry, with LOAD_THRESHOLD unset. */
  let lone: RunningServer;
  let sipA: number;
  let sipB: number;
  let burners: ChildProcess[] = [];
  const clients: RtcClient[] = [];

  const stopBurners = async () => {
    const exits = burners.map((b) => new Promise((r) => (b.exitCode !== null || b.signalCode !== null ? r(null) : b.once('exit', r))));
    for (const b of burners) b.kill('SIGKILL');
    await Promise.all(exits);
    burners = [];
  };

  before(async () => {
    [sipA, sipB] = [await freePort(), await freePort()];
    hooks = await startWebhookReceiver(WEBHOOK_SECRET);
    cluster = await startTwoNodes('parley_placement', {
      shared: { SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*', WEBHOOK_URL: hooks.url, WEBHOOK_SECRET, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', WEBHOOK_EVENTS: 'call.started,call.ended' },
      a: { SIP_PORT: String(sipA), LOAD_THRESHOLD: String(THRESHOLD), OPUS_COMPLEXITY: '5', OPUS_MIN_COMPLEXITY: '2' },
      b: { SIP_PORT: String(sipB), LOAD_THRESHOLD: '0' },
    });
    ({ a: nodeA, b: nodeB } = cluster);
    // '' unsets what the test servers' environment sets (LOAD_THRESHOLD=0).
    lone = await startServer({ NODE_ID: 'lone', LOAD_THRESHOLD: '' });
  });
  after(async () => {
    await stopBurners();
    for (const c of clients) c.close();
    await lone?.stop();
    await cluster?.stop();
    await hooks?.close();
  });

  test('A, loaded past its threshold, steps its encoders down and says so in /readyz, still 200', async () => {
    burners = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    await until('A loaded past its threshold', () => metric(nodeA.baseUrl, 'parley_node_load'), (load) => load >= THRESHOLD, 30_000);
    const ready = await until('/readyz to say A takes no new calls', () => http(nodeA.baseUrl, '/readyz'), (r) => /taking no new calls/.test(r.body?.checks?.load?.detail ?? ''), 15_000);
    assert.equal(ready.status, 200, 'a loaded node still serves its calls');
    assert.equal(ready.body.checks.load.state, 'degraded');
    assert.match(ready.body.checks.load.detail, /^load \d\.\d\d, threshold 0\.9: taking no new calls$/);
    await until("A's encoders stepped down", () => metric(nodeA.baseUrl, 'parley_opus_complexity'), (c) => c < 5, 15_000);
    assert.equal(await metric(nodeA.baseUrl, 'parley_node_load_threshold'), THRESHOLD);
  });

  test('a lone node with LOAD_THRESHOLD unset, loaded past the default 0.75, takes its call itself, degraded', async () => {
    await until('the lone node loaded past 0.75', () => metric(lone.baseUrl, 'parley_node_load'), (load) => load >= 0.75, 30_000);
    const ready = await until('/readyz to say the lone node is loaded', () => http(lone.baseUrl, '/readyz'), (r) => r.body?.checks?.load?.state === 'degraded', 15_000);
    assert.equal(ready.status, 200);
    assert.match(ready.body.checks.load.detail, /^load \d\.\d\d, threshold 0\.75 \(default\): new calls go to another node with room, else are taken here$/);
    const client = await openCall(lone.baseUrl, await mintToken(lone.baseUrl, lone.devKey), { params: { model: 'audio-echo' } });
    clients.push(client);
    assert.equal(client.answeredBy, 'lone');
    await client.waitConnected();
    assert.equal(await metric(lone.baseUrl, 'parley_node_load_threshold'), 0.75);
  });

  test('the next WebRTC call sent to A is answered by B and connects, with its record, webhooks and sideband; A counts it placed elsewhere for its load', async () => {
    const client = await openCall(nodeA.baseUrl, await mintToken(nodeA.baseUrl, nodeA.devKey), { params: { model: 'audio-echo' } });
    clients.push(client);
    assert.equal(client.answeredBy, 'node-b');
    await client.waitConnected();
    const record = await until('the call active in its record', () => http(nodeA.baseUrl, `/v1/realtime/conversations/${client.conversationId}`, { token: nodeA.devKey }), (r) => r.body?.state === 'active');
    assert.equal(record.status, 200, JSON.stringify(record.body));
    assert.match(await (await fetch(`${nodeA.baseUrl}/metrics`)).text(), /parley_calls_forwarded_total\{status="200",reason="loaded"\} 1/);
    // Its webhooks come as for any call (B sends them), and an app's sideband opened on A reaches it on B.
    await until('call.started for the call B carries', () => hooks.events.find((e) => e.type === 'call.started' && e.data.call_id === client.conversationId), Boolean, 30_000);
    const sideband = new WebSocket(`${nodeA.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${client.conversationId}`, { headers: { authorization: `Bearer ${nodeA.devKey}` } });
    const events: any[] = [];
    sideband.on('message', (data) => events.push(JSON.parse(String(data))));
    sideband.on('open', () => sideband.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'Placed on B.' } })));
    try {
      const updated: any = await until('session.updated through A', () => events.find((e) => e.type === 'session.updated'), Boolean, 30_000);
      assert.equal(updated.session.instructions, 'Placed on B.');
    } finally {
      sideband.close();
    }
  });

  test('a WebSocket session opened on A is carried by B, through the one connection to A', async () => {
    const socket = new WebSocket(`${nodeA.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${nodeA.devKey}` } });
    const events: any[] = [];
    socket.on('message', (data) => events.push(JSON.parse(String(data))));
    socket.on('unexpected-response', (_req, res) => events.push({ type: 'refused', status: res.statusCode }));
    try {
      await until('session.created', () => events.map((e) => e.type), (types) => types.includes('session.created') || types.includes('refused'));
      assert.equal(events[0].type, 'session.created', JSON.stringify(events[0]));
      socket.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] } }));
      socket.send(JSON.stringify({ type: 'response.create' }));
      const done: any = await until('response.done', () => events.find((e) => e.type === 'response.done'), Boolean, 30_000);
      assert.equal(done.response.status, 'completed');
      // B carries it (beside the WebRTC call above); A carries nothing.
      assert.equal(await metric(nodeA.baseUrl, 'parley_active_calls'), 0);
      assert.equal(await metric(nodeB.baseUrl, 'parley_active_calls'), 2);
      assert.match(await (await fetch(`${nodeA.baseUrl}/metrics`)).text(), /parley_calls_forwarded_total\{status="101",reason="loaded"\} 1/);
    } finally {
      socket.close();
    }
  });

  test("a SIP INVITE to A is redirected (302) to B's SIP door, the number kept; B answers it there", async () => {
    const socket = createSocket('udp4');
    const heard: string[] = [];
    socket.on('message', (m) => heard.push(m.toString('latin1')));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    const sdp = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';
    const callId = randomBytes(8).toString('hex');
    const fromTag = randomBytes(4).toString('hex');
    const send = (port: number) =>
      socket.send(
        [
          `INVITE sip:support@127.0.0.1:${port} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${socket.address().port};branch=z9hG4bK${randomBytes(6).toString('hex')};rport`,
          'Max-Forwards: 70',
          `From: <sip:trunk@127.0.0.1>;tag=${fromTag}`,
          'To: <sip:support@127.0.0.1>',
          `Call-ID: ${callId}`,
          `CSeq: ${port === sipA ? 1 : 2} INVITE`,
          `Contact: <sip:trunk@127.0.0.1:${socket.address().port}>`,
          'Content-Type: application/sdp',
          `Content-Length: ${sdp.length}`,
          '',
          sdp,
        ].join('\r\n'),
        port,
        '127.0.0.1',
      );
    try {
      send(sipA);
      const redirect = await until('a final answer from A', () => heard.find((t) => /^SIP\/2\.0 [2-6]\d\d /.test(t)), (t) => t !== undefined, 15_000);
      assert.match(redirect!, /^SIP\/2\.0 302 /);
      assert.match(redirect!, new RegExp(`\r\nContact: <sip:support@127\\.0\\.0\\.1:${sipB}>\r\n`));
      // As a trunk or proxy follows the redirect: the same INVITE, to B.
      heard.length = 0;
      send(sipB);
      const answered = await until("B's final answer", () => heard.find((t) => /^SIP\/2\.0 [2-6]\d\d /.test(t)), (t) => t !== undefined, 30_000);
      assert.match(answered!, /^SIP\/2\.0 200 /);
      assert.match(await (await fetch(`${nodeA.baseUrl}/metrics`)).text(), /parley_calls_forwarded_total\{status="302",reason="loaded"\} 1/);
    } finally {
      socket.close();
    }
  });

  test("an outbound phone call asked of A is placed by B: the callee's INVITE comes from B's SIP door", async () => {
    const phone = await startSipPhone('answer');
    try {
      const res = await fetch(`${nodeA.baseUrl}/v1/realtime/sip/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${nodeA.devKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `sip:callee@127.0.0.1:${phone.port}`, wait_for_callee: true }),
      });
      assert.equal(res.status, 201, await res.clone().text());
      const { call_id } = (await res.json()) as { call_id: string };
      await until('the call active in its record', () => http(nodeA.baseUrl, `/v1/realtime/conversations/${call_id}`, { token: nodeA.devKey }), (r) => r.body?.state === 'active');
      assert.deepEqual(phone.heard.filter((r) => r.method === 'INVITE').map((r) => r.fromPort), [sipB]);
      assert.match(await (await fetch(`${nodeA.baseUrl}/metrics`)).text(), /parley_calls_forwarded_total\{status="201",reason="loaded"\} 1/);
      // Hung up through A: B carries it and ends it.
      assert.equal((await http(nodeA.baseUrl, `/v1/realtime/calls/${call_id}/hangup`, { method: 'POST', token: nodeA.devKey })).status, 200);
    } finally {
      phone.close();
    }
  });

  test('with the burners gone, A takes calls again and its encoders climb back', async () => {
    await stopBurners();
    await until('A ready for calls again', () => http(nodeA.baseUrl, '/readyz'), (r) => r.body?.checks?.load?.state === 'ready', 60_000);
    await until("A's encoders back at OPUS_COMPLEXITY", () => metric(nodeA.baseUrl, 'parley_opus_complexity'), (c) => c === 5, 60_000);
    const client = await openCall(nodeA.baseUrl, await mintToken(nodeA.baseUrl, nodeA.devKey), { params: { model: 'audio-echo' } });
    clients.push(client);
    assert.equal(client.answeredBy, 'node-a');
    await client.waitConnected();
  });
});
