// Admission on a real node: one key posts real offers (libwebrtc peers) that never connect. Past its
// half-open budget it is refused (429, in each form's error shape) while another key's call still
// connects with audio; the node-wide half-open budget makes the node full (503) without touching
// the live call; the half-open calls are released within the short connect timeout. Then load: a
// lone node past a LOAD_THRESHOLD the operator set refuses (503, server_error), and on a loaded node
// with nowhere to place a call, a caller at its own limit across the cluster hears that first (429).
// (A lone node past the default threshold taking its call is in test/placement.test.ts, which loads
// the machine.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openAiStylePeer } from './helpers/openaiPeer.ts';
import { attachTone, listen, openCall, type RtcClient } from './helpers/rtcClient.ts';
import { http, metric, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { startTwoNodes, type TwoNodes } from './helpers/twoNodes.ts';
import { until } from './helpers/wait.ts';

const CONNECT_TIMEOUT_MS = 5000;
const HALF_OPEN_PER_KEY = 3;
const HALF_OPEN = 5;

async function createKey(server: RunningServer, name: string): Promise<string> {
  const created = await server.cli('keys', 'create', '--name', name);
  assert.equal(created.code, 0, created.stderr);
  return /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
}

/** Posts a real offer whose peer never learns the answer (no ICE checks from it, ever). */
const halfOpen = async (server: RunningServer, key: string) =>
  openCall(server.baseUrl, await mintToken(server.baseUrl, key), { withholdCandidates: true, params: { model: 'audio-echo' } });

describe('admission: half-open calls cannot crowd out live ones', () => {
  let server: RunningServer;
  let keyB: string;
  let keyC: string;
  const clients: RtcClient[] = [];
  const attacker: RtcClient[] = [];
  let attackStartedAt = 0;

  before(async () => {
    server = await startServer({
      CALL_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      MAX_HALF_OPEN_CALLS: String(HALF_OPEN),
      MAX_HALF_OPEN_CALLS_PER_KEY: String(HALF_OPEN_PER_KEY),
      MAX_CALLS_PER_KEY: '10',
    });
    keyB = await createKey(server, 'tenant-b');
    keyC = await createKey(server, 'tenant-c');
  });
  after(async () => {
    for (const c of [...clients, ...attacker]) c.close();
    await server?.stop();
  });

  test('one key is refused past its half-open budget (429, Shape A and OpenAI form, Retry-After)', async () => {
    attackStartedAt = Date.now();
    for (let i = 0; i < HALF_OPEN_PER_KEY; i++) attacker.push(await halfOpen(server, server.devKey));
    assert.equal(await metric(server.baseUrl, 'parley_half_open_calls'), HALF_OPEN_PER_KEY);

    const token = await mintToken(server.baseUrl, server.devKey);
    await assert.rejects(halfOpen(server, server.devKey), (err: any) => {
      assert.equal(err.status, 429);
      assert.deepEqual(Object.keys(err.body.error).sort(), ['code', 'message', 'param', 'type']);
      assert.equal(err.body.error.type, 'invalid_request_error');
      assert.equal(err.body.error.code, 'rate_limit_exceeded');
      assert.match(err.body.error.message, /still connecting/);
      return true;
    });
    const peer = await openAiStylePeer();
    try {
      const res = await fetch(`${server.baseUrl}/v1/realtime/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/sdp' },
        body: peer.offerSdp,
      });
      assert.equal(res.status, 429);
      assert.equal(res.headers.get('retry-after'), '5');
      const body = (await res.json()) as any;
      assert.equal(body.error.type, 'requests');
      assert.equal(body.error.code, 'rate_limit_exceeded');
    } finally {
      peer.pc.close();
    }
    assert.match(await (await fetch(`${server.baseUrl}/metrics`)).text(), /parley_rate_limited_total\{limit="calls-key-half-open"\} 2/);
  });

  test("meanwhile another key's call connects and echoes audio", async () => {
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, keyB), { params: { model: 'audio-echo' } });
    clients.push(client);
    await client.waitConnected();
    const ear = listen(client);
    const stopTone = await attachTone(client);
    try {
      await until('echoed audio', () => ear.peakRms(), (rms) => rms > 1000);
    } finally {
      stopTone();
      ear.stop();
    }
    // Connected: it left the half-open budget.
    await until('only the attacker half-open', () => metric(server.baseUrl, 'parley_half_open_calls'), (n) => n === HALF_OPEN_PER_KEY);
  });

  test('the node-wide half-open budget spent: 503 for new calls, the live call goes on', async () => {
    for (let i = 0; i < HALF_OPEN - HALF_OPEN_PER_KEY; i++) attacker.push(await halfOpen(server, keyC));
    await assert.rejects(openCall(server.baseUrl, await mintToken(server.baseUrl, keyB), { params: { model: 'audio-echo' } }), (err: any) => {
      assert.equal(err.status, 503);
      assert.equal(err.body.error.type, 'server_error');
      return true;
    });
    const live = await http(server.baseUrl, `/v1/realtime/conversations/${clients[0]!.conversationId}`, { token: keyB });
    assert.equal(live.body.state, 'active');
  });

  test('half-open calls are released within the short connect timeout; the key may call again', async (t) => {
    await until('half-open calls released', () => metric(server.baseUrl, 'parley_half_open_calls'), (n) => n === 0, CONNECT_TIMEOUT_MS + 10_000);
    const releasedAfter = Date.now() - attackStartedAt;
    const last = (await http(server.baseUrl, `/v1/realtime/conversations/${attacker.at(-1)!.conversationId}`, { token: keyC })).body;
    assert.equal(last.state, 'failed');
    assert.equal(last.end_reason, 'connect_timeout');
    const first = (await http(server.baseUrl, `/v1/realtime/conversations/${attacker[0]!.conversationId}`, { token: server.devKey })).body;
    assert.equal(first.state, 'failed');
    assert.equal(first.end_reason, 'connect_timeout');
    // The first offer's call was released no later than its timeout and a scrape's lag after it.
    const heldMs = Date.parse(first.ended_at) - Date.parse(first.created_at);
    t.diagnostic(`first half-open call held ${heldMs} ms (CALL_CONNECT_TIMEOUT_MS=${CONNECT_TIMEOUT_MS}); all ${attacker.length} released ${releasedAfter} ms after the first offer`);
    assert.ok(heldMs < CONNECT_TIMEOUT_MS + 1000, JSON.stringify(first));

    const again = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    clients.push(again);
    await again.waitConnected();
    const live = await http(server.baseUrl, `/v1/realtime/conversations/${clients[0]!.conversationId}`, { token: keyB });
    assert.equal(live.body.state, 'active', "the other key's call was never touched");
  });
});

/** A threshold any running node's load is past (an idle node's event loop is busier than this). */
const ALWAYS_LOADED = '0.001';

/** Waits until `server` says in /readyz that its load keeps new calls away. */
const loaded = (server: RunningServer) =>
  until('/readyz to say the node takes no new calls', () => http(server.baseUrl, '/readyz'), (r) => r.body?.checks?.load?.state === 'degraded', 30_000);

describe('a lone node past the LOAD_THRESHOLD its operator set', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ LOAD_THRESHOLD: ALWAYS_LOADED });
  });
  after(async () => {
    await server?.stop();
  });

  test('refuses the call: 503 with Retry-After, type server_error, the load figure within 0–1', async () => {
    const ready = await loaded(server);
    assert.match(ready.body.checks.load.detail, /: taking no new calls$/);
    await assert.rejects(openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } }), (err: any) => {
      assert.equal(err.status, 503, JSON.stringify(err.body));
      assert.equal(err.body.error.type, 'server_error');
      assert.equal(err.body.error.code, 'server_busy');
      const figure = Number(/This server is loaded \((\d+\.\d\d), its threshold LOAD_THRESHOLD is 0\.001\)/.exec(err.body.error.message)?.[1]);
      assert.ok(figure >= 0 && figure <= 1, err.body.error.message);
      return true;
    });
    const peer = await openAiStylePeer();
    try {
      const raw = await fetch(`${server.baseUrl}/v1/realtime/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await mintToken(server.baseUrl, server.devKey)}`, 'content-type': 'application/sdp' },
        body: peer.offerSdp,
      });
      assert.equal(raw.status, 503);
      assert.equal(raw.headers.get('retry-after'), '5');
      const { type, param, code } = ((await raw.json()) as any).error;
      assert.deepEqual({ type, param, code }, { type: 'server_error', param: null, code: 'server_busy' });
    } finally {
      peer.pc.close();
    }
  });
});

describe('a loaded node with nowhere to place a call answers the caller\'s own limit first', () => {
  let cluster: TwoNodes;
  const clients: RtcClient[] = [];
  before(async () => {
    // A is always loaded; B takes one call, then is full: neither can take another.
    cluster = await startTwoNodes('parley_admission_load', {
      shared: { MAX_CALLS_PER_KEY: '1' },
      a: { LOAD_THRESHOLD: ALWAYS_LOADED },
      b: { LOAD_THRESHOLD: '0', MAX_CONCURRENT_CALLS: '1' },
    });
  });
  after(async () => {
    for (const c of clients) c.close();
    await cluster?.stop();
  });

  test('a key at MAX_CALLS_PER_KEY across the cluster gets 429 from A, not 503; another key gets 503', async () => {
    const { a, b } = cluster;
    const onB = await openCall(b.baseUrl, await mintToken(b.baseUrl, a.devKey), { params: { model: 'audio-echo' } });
    clients.push(onB);
    await onB.waitConnected();
    await loaded(a);
    // A sees B full in the registry (its heartbeat carries its calls), so it has nowhere to place a call.
    const db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
    try {
      await until("B's heartbeat to show its call", async () => (await db.query("SELECT calls FROM nodes WHERE id = 'node-b'")).rows[0]?.calls, (n) => Number(n) === 1);
    } finally {
      await db.end();
    }
    await assert.rejects(openCall(a.baseUrl, await mintToken(a.baseUrl, a.devKey), { params: { model: 'audio-echo' } }), (err: any) => {
      assert.equal(err.status, 429, JSON.stringify(err.body));
      assert.equal(err.body.error.code, 'rate_limit_exceeded');
      assert.match(err.body.error.message, /already has 1 calls across the cluster \(its limit\)/);
      return true;
    });
    const other = await createKey(a, 'tenant-other');
    await assert.rejects(openCall(a.baseUrl, await mintToken(a.baseUrl, other), { params: { model: 'audio-echo' } }), (err: any) => {
      assert.equal(err.status, 503, JSON.stringify(err.body));
      assert.equal(err.body.error.type, 'server_error');
      return true;
    });
  });
});
