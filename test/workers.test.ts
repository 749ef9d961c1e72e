// PARLEY_WORKERS=2: one port, two worker processes, each a node carrying the calls it answered.
// Calls answered by either worker connect with audio, WebSocket sessions opened on either are carried
// by it, and a full worker places the next call and session on the other; hang-up and conversation
// reads work whichever worker takes the request. node:cluster hands new connections to the workers in turn, and every
// answer names its worker (x-parley-node), so the test steers a request to the worker it wants:
// each request on a new connection, after one answered by the other worker.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { childPids } from './helpers/processes.ts';
import { attachTone, listen, openCall, type RtcClient } from './helpers/rtcClient.ts';
import { http, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';
import WebSocket from 'ws';

const NEW_CONNECTION = { connection: 'close' };
const WORKERS = ['wtest-w1', 'wtest-w2'];

const answeredBy = (res: { headers: Headers }) => res.headers.get('x-parley-node');

/** Requests on new connections to `server()`, steered to the worker wanted. */
function steering(server: () => RunningServer) {
  const request = (path: string, opts: Parameters<typeof http>[2] = {}) => http(server().baseUrl, path, { ...opts, headers: { ...opts.headers, ...NEW_CONNECTION } });
  /** Makes the next new connection go to `worker`: the one before it goes to the other. */
  const steerTo = (worker: string) => {
    const before = WORKERS.find((w) => w !== worker)!;
    return until(`a request answered by ${before}`, async () => answeredBy(await request('/healthz')), (n) => n === before);
  };
  const token = async () => (await request('/v1/realtime/client-secrets', { method: 'POST', token: server().devKey })).body.ephemeral_token as string;
  /** GET /metrics?scope=worker of `worker`. */
  const workerMetrics = async (worker: string) => {
    await steerTo(worker);
    const res = await fetch(`${server().baseUrl}/metrics?scope=worker`, { headers: NEW_CONNECTION });
    assert.equal(answeredBy(res), worker);
    return res.text();
  };
  return { request, steerTo, token, workerMetrics };
}

/** A WebSocket session's events, once it has answered a question. */
async function answeredSession(url: string, apiKey: string): Promise<WebSocket> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${apiKey}` } });
  const events: any[] = [];
  socket.on('message', (data) => events.push(JSON.parse(String(data))));
  await until('session.created', () => events[0]?.type, (type) => type !== undefined);
  assert.equal(events[0].type, 'session.created', JSON.stringify(events[0]));
  socket.send(JSON.stringify({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] } }));
  socket.send(JSON.stringify({ type: 'response.create' }));
  const done: any = await until('response.done', () => events.find((e) => e.type === 'response.done'), Boolean, 30_000);
  assert.equal(done.response.status, 'completed');
  return socket;
}

describe('PARLEY_WORKERS=2', () => {
  let server: RunningServer;
  const clients: RtcClient[] = [];
  before(async () => {
    server = await startServer({ PARLEY_WORKERS: '2', NODE_ID: 'wtest' });
  });
  after(async () => {
    for (const c of clients) c.close();
    await server?.stop();
  });

  const { request, steerTo, token, workerMetrics } = steering(() => server);

  test('the ready line comes once every worker listens, and both answer on the one port', async () => {
    assert.match(server.stdout(), /parley ready at http:\/\/127\.0\.0\.1:\d+ \(2 workers\)/);
    const seen = new Set<string | null>();
    for (let i = 0; i < 4; i++) seen.add(answeredBy(await request('/healthz')));
    assert.deepEqual([...seen].sort(), WORKERS);
  });

  test('calls answered by either worker connect and carry audio both ways', async () => {
    for (const worker of WORKERS) {
      const t = await token();
      await steerTo(worker);
      const client = await openCall(server.baseUrl, t, { params: { model: 'audio-echo' }, headers: NEW_CONNECTION });
      clients.push(client);
      assert.equal(client.answeredBy, worker);
      await client.waitConnected();
      const ear = listen(client);
      const stopTone = await attachTone(client);
      await until(`echoed audio from ${worker}`, () => ear.peakRms(), (rms) => rms > 1000);
      stopTone();
      ear.stop();
    }
  });

  test('GET /metrics sums every worker; ?scope=worker is the answering one alone', async () => {
    const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    for (const worker of WORKERS) {
      await steerTo(worker);
      const res = await fetch(`${server.baseUrl}/metrics`, { headers: NEW_CONNECTION });
      assert.equal(answeredBy(res), worker);
      assert.equal(value(await res.text(), 'parley_active_calls'), 2, 'one call on each worker, summed');
      assert.equal(value(await workerMetrics(worker), 'parley_active_calls'), 1);
    }
  });

  test("conversation reads and hang-up work on the worker that does not carry the call", async () => {
    for (const client of clients) {
      const owner = client.answeredBy!;
      const other = WORKERS.find((w) => w !== owner)!;
      await until('the call recorded active', async () => (await request(`/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey })).body.state, (s) => s === 'active');

      await steerTo(other);
      const read = await request(`/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey });
      assert.equal(answeredBy(read), other);
      assert.equal(read.status, 200);
      assert.equal(read.body.state, 'active');

      await steerTo(other);
      const hangup = await request(`/v1/realtime/calls/${client.conversationId}/hangup`, { method: 'POST', token: server.devKey });
      assert.equal(hangup.status, 200, JSON.stringify(hangup.body));
      assert.equal(answeredBy(hangup), owner, "the owner's answer, relayed by the other worker");
      const ended = await client.nextEvent('session.ended');
      assert.equal(ended.reason, 'hangup_request');

      const after = await until('the call recorded ended', () => request(`/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey }), (r) => r.body.state === 'ended');
      assert.equal(after.body.end_reason, 'hangup_request');
    }
  });

  test('WebSocket sessions opened on either worker are carried by it, and answer', async () => {
    const sockets: WebSocket[] = [];
    try {
      for (const worker of WORKERS) {
        await steerTo(worker);
        sockets.push(await answeredSession(server.baseUrl, server.devKey));
      }
      for (const worker of WORKERS) assert.match(await workerMetrics(worker), /^parley_active_calls 1$/m, `one session on ${worker}`);
    } finally {
      for (const socket of sockets) socket.close();
    }
  });

  test('a hang-up of a call no worker carries is 404 on either', async () => {
    for (const worker of WORKERS) {
      await steerTo(worker);
      const res = await request('/v1/realtime/calls/conv_nonexistent/hangup', { method: 'POST', token: server.devKey });
      assert.equal(answeredBy(res), worker);
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, 'call_not_found');
    }
  });

  test("a worker killed mid-call is replaced: its call is recorded failed (node_lost), the port keeps answering", async () => {
    const t = await token();
    await steerTo('wtest-w1');
    const client = await openCall(server.baseUrl, t, { params: { model: 'audio-echo' }, headers: NEW_CONNECTION });
    clients.push(client);
    assert.equal(client.answeredBy, 'wtest-w1');
    await client.waitConnected();
    await until('the call recorded active', async () => (await request(`/v1/realtime/conversations/${client.conversationId}`, { token: server.devKey })).body.state, (s) => s === 'active');

    process.kill(workerPid(server.proc.pid!, 1), 'SIGKILL');
    // A connection handed to the worker as it died is lost with it (as with any crashed server):
    // these requests give up after a while and are asked again.
    const patiently = async (path: string) => {
      const res = await fetch(server.baseUrl + path, { headers: { ...NEW_CONNECTION, authorization: `Bearer ${server.devKey}` }, signal: AbortSignal.timeout(3000) }).catch(() => undefined);
      return res && { node: answeredBy(res), body: (await res.json()) as any };
    };
    // The replacement starts with the same node id and records what its predecessor left unfinished.
    const rec = await until('the call recorded failed', () => patiently(`/v1/realtime/conversations/${client.conversationId}`), (r) => r?.body.state === 'failed', 30_000);
    assert.equal(rec!.body.end_reason, 'node_lost');
    assert.match(server.stderr(), /worker exited; starting another in its place/);
    const seen = new Set<string | null | undefined>();
    await until('both workers answering', async () => seen.add((await patiently('/healthz'))?.node).size, () => seen.has('wtest-w1') && seen.has('wtest-w2'), 30_000);
  });

  test('SIGTERM to the primary drains every worker and ends with exit code 0', async () => {
    const t = await token();
    const client = await openCall(server.baseUrl, t, { params: { model: 'audio-echo' }, headers: NEW_CONNECTION });
    clients.push(client);
    await client.waitConnected();
    // The worker has taken the event channel (its greeting came), so the goodbye has a way out.
    await client.nextEvent('session.created');
    const ended = client.nextEvent('session.ended', 20_000);
    assert.equal(await server.stop('SIGTERM', { keepData: true }), 0);
    assert.equal((await ended).reason, 'server_shutdown');
  });
});

/** The pid of worker `index` among the primary's children (its environment names its index). */
function workerPid(primaryPid: number, index: number): number {
  const children = childPids(primaryPid);
  const pid = children.find((child) => readFileSync(`/proc/${child}/environ`, 'utf8').split('\0').includes(`PARLEY_WORKER_INDEX=${index}`));
  assert.ok(pid, `worker ${index} among ${children.join(', ')}`);
  return pid;
}

describe('PARLEY_WORKERS=2, each worker at most 2 calls', () => {
  let server: RunningServer;
  const clients: RtcClient[] = [];
  const sockets: WebSocket[] = [];
  before(async () => {
    server = await startServer({ PARLEY_WORKERS: '2', NODE_ID: 'wtest', MAX_CONCURRENT_CALLS: '2', NODE_HEARTBEAT_MS: '500' });
  });
  after(async () => {
    for (const c of clients) c.close();
    for (const s of sockets) s.close();
    await server?.stop();
  });
  const { steerTo, token, workerMetrics } = steering(() => server);
  const callOn = async (worker: string) => {
    const t = await token();
    await steerTo(worker);
    const client = await openCall(server.baseUrl, t, { params: { model: 'audio-echo' }, headers: NEW_CONNECTION });
    clients.push(client);
    await client.waitConnected();
    return client;
  };

  test('a full worker passes the next WebRTC call and WebSocket session to the other worker', async () => {
    for (let i = 0; i < 2; i++) assert.equal((await callOn('wtest-w1')).answeredBy, 'wtest-w1');
    assert.equal((await callOn('wtest-w1')).answeredBy, 'wtest-w2', 'passed on by the full worker');
    await steerTo('wtest-w1');
    sockets.push(await answeredSession(server.baseUrl, server.devKey));
    const w1 = await workerMetrics('wtest-w1');
    assert.match(w1, /^parley_active_calls 2$/m);
    assert.match(w1, /^parley_calls_forwarded_total\{status="200",reason="full"\} 1$/m);
    assert.match(w1, /^parley_calls_forwarded_total\{status="101",reason="full"\} 1$/m);
    assert.match(await workerMetrics('wtest-w2'), /^parley_active_calls 2$/m, 'the passed call and the relayed session');
  });
});

