// Webhooks end to end: a real receiver (node:http on loopback) verifies every delivery with the
// standardwebhooks library. An OpenAI WebSocket session (openai's OpenAIRealtimeWS, TLS), a call
// with the published Orga SDK in Chromium and an Orga-style WebRTC call (@roamhq/wrtc) each give
// call.started then call.ended with usage and quality, to the global endpoint (WEBHOOK_URL) and to a key's own (the CLI); call.turn only where asked for; a tampered
// delivery fails verification; 410 disables an endpoint; a call that never connects gives
// call.failed; a receiver down during a call and Parley killed with SIGKILL before it is back:
// after the restart every event arrives, once.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import WebSocket from 'ws';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { openOrgaPage, startOrgaApp, waitForOrga, type OrgaApp } from './helpers/orgaSdk.ts';
import { attachTone, openCall, outboundAudio } from './helpers/rtcClient.ts';
import { mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { speakToWav } from './helpers/speech.ts';
import { makeCertificate } from './helpers/tls.ts';
import { until } from './helpers/wait.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  event: any;
  /** What the receiver answered. */
  status: number;
}

/** A webhook receiver on 127.0.0.1: records every request; answers `statusFor(path)` (204 by default). */
class Receiver {
  readonly received: Received[] = [];
  statusFor: (path: string) => number = () => 204;
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const status = this.statusFor(req.url ?? '/');
        this.received.push({ path: req.url ?? '/', headers: req.headers, body, event: JSON.parse(body), status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', resolve);
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** Deliveries to `path` of call `callId`'s events, each verified with `secret` (a delivery that does not verify throws). */
  eventsOf(path: string, callId: string, secret: string): Received[] {
    return this.received.filter((r) => r.path === path && r.event.data.call_id === callId).map((r) => verified(r, secret));
  }
}

/** The delivery as standardwebhooks' Webhook.verify accepts it (it throws otherwise). */
function verified(r: Received, secret: string): Received {
  const headers = { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) };
  assert.deepEqual(new Webhook(secret).verify(r.body, headers), r.event);
  assert.equal(headers['webhook-id'], r.event.id, 'webhook-id is the event id');
  return r;
}

const types = (rs: Received[]) => rs.map((r) => r.event.type);

function newSecret(): string {
  return `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256)).toString('base64')}`;
}

/** Settings that make retries quick and polling frequent, for tests, and let webhooks reach the receivers on loopback. */
const QUICK = { WEBHOOK_RETRY_MAX_MS: '300', WEBHOOK_POLL_MS: '100', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' };

describe('webhooks on a TLS node: OpenAI WebSocket sessions, per-key endpoints, the CLI', () => {
  const globalSecret = newSecret();
  const receiver = new Receiver();
  let server: RunningServer;
  let ca: string;
  let certDir: string;
  let apiKey: string;
  let keyId: string;
  let endpointId: string;
  let keySecret: string;

  before(async () => {
    await receiver.start();
    certDir = mkdtempSync(join(tmpdir(), 'parley-webhooks-tls-'));
    const { cert, key } = makeCertificate(certDir);
    ca = readFileSync(cert, 'utf8');
    server = await startServer({
      TLS_CERT_FILE: cert,
      TLS_KEY_FILE: key,
      WEBHOOK_URL: receiver.url('/global'),
      WEBHOOK_SECRET: globalSecret,
      WEBHOOK_EVENTS: 'call.started,call.ended,call.failed,call.turn',
      ...QUICK,
    });
    const created = await server.cli('keys', 'create', '--name', 'webhooks');
    apiKey = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
    keyId = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
  });
  after(async () => {
    await server?.stop();
    await receiver.stop();
    rmSync(certDir, { recursive: true, force: true });
  });

  /** A session as openai's docs show it, its text turn answered, then closed; returns its call id. */
  async function session(key: string): Promise<string> {
    const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca } }, new OpenAI({ apiKey: key, baseURL: `${server.baseUrl}/v1` }));
    const events: any[] = [];
    rt.on('event', (e: any) => events.push(e));
    const created = await until('session.created', () => events.find((e) => e.type === 'session.created'), (e) => e !== undefined);
    rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] } });
    rt.send({ type: 'response.create' });
    await until('response.done', () => events.find((e) => e.type === 'response.done'), (e) => e !== undefined, 20_000);
    rt.close();
    return created.session.id;
  }

  test('parley webhooks add prints the secret once; list shows the endpoint, never a secret', async () => {
    const added = await server.cli('webhooks', 'add', '--key', keyId, '--url', receiver.url('/key'));
    assert.equal(added.code, 0, added.stderr);
    keySecret = /secret:\s+(whsec_\S+)/.exec(added.stdout)![1]!;
    endpointId = /id:\s+(whep_\S+)/.exec(added.stdout)![1]!;
    assert.match(added.stdout, /events:\s+call\.started,call\.ended,call\.failed\n/);
    assert.match(added.stderr, /cannot show it again/);
    const list = await server.cli('webhooks', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`${endpointId}\\t${keyId}\\t${receiver.url('/key')}\\tcall\\.started,call\\.ended,call\\.failed\\tactive`));
    assert.match(list.stdout, /global\t\(all keys\)\thttp:\/\/127\.0\.0\.1:\d+\/global\tcall\.started,call\.ended,call\.failed,call\.turn\tactive/);
    assert.ok(!list.stdout.includes(keySecret.slice(6)) && !list.stdout.includes(globalSecret.slice(6)));
    const json = JSON.parse((await server.cli('webhooks', 'list', '--key', keyId, '--json')).stdout);
    assert.deepEqual(json.map((e: any) => e.id), [endpointId]);
  });

  test('the CLI refuses what it cannot use, in one line each', async () => {
    const cases: [string[], RegExp][] = [
      [['webhooks', 'add', '--key', keyId, '--url', receiver.url('/x'), '--events', 'call.ended,call.exploded'], /--events: unknown event type\(s\) call\.exploded/],
      [['webhooks', 'add', '--key', keyId, '--url', 'ftp://127.0.0.1/x'], /--url: expected an http\(s\) URL/],
      [['webhooks', 'add', '--key', 'key_nosuchkey', '--url', receiver.url('/x')], /no active API key with id key_nosuchkey/],
      [['webhooks', 'remove', 'whep_nosuch'], /no webhook endpoint with id whep_nosuch/],
      [['webhooks', 'remove', 'global'], /comes from WEBHOOK_URL/],
      [['webhooks', 'deliveries', '--limit', 'many'], /--limit: expected an integer/],
    ];
    for (const [args, message] of cases) {
      const r = await server.cli(...args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, message);
    }
  });

  test("a session gives call.started then call.ended to the global endpoint and to its key's, and call.turn only where asked for", async () => {
    const callId = await session(apiKey);
    const global = await until('the global events', () => receiver.eventsOf('/global', callId, globalSecret), (rs) => types(rs).includes('call.ended'));
    const own = await until("the key's events", () => receiver.eventsOf('/key', callId, keySecret), (rs) => types(rs).includes('call.ended'));
    assert.deepEqual(types(own), ['call.started', 'call.ended']);
    assert.equal(types(global)[0], 'call.started');
    assert.equal(types(global).at(-1), 'call.ended');
    const turns = global.filter((r) => r.event.type === 'call.turn').map((r) => r.event.data);
    assert.deepEqual(turns[0], { call_id: callId, api_key_id: keyId, role: 'user', transcript: 'What time is it?' });
    assert.equal(turns[1].role, 'assistant');
    assert.ok(turns[1].transcript.length > 0);
    const ended = own[1]!.event;
    assert.equal(ended.object, 'event');
    assert.match(ended.id, /^evt_/);
    assert.equal(typeof ended.created_at, 'number');
    assert.equal(ended.data.call_id, callId);
    assert.equal(ended.data.api_key_id, keyId);
    assert.equal(ended.data.state, 'ended');
    assert.equal(ended.data.end_reason, 'hangup');
    assert.equal(ended.data.transport, 'websocket');
    assert.ok(ended.data.started_at <= ended.data.connected_at && ended.data.connected_at <= ended.data.ended_at, JSON.stringify(ended.data));
    assert.ok(ended.data.duration_s > 0, JSON.stringify(ended.data));
    assert.ok(ended.data.usage.output_tokens > 0 && ended.data.usage.agent_audio_s > 0, JSON.stringify(ended.data.usage));
    assert.equal(ended.data.quality.transport, 'websocket');
    assert.ok(ended.data.quality.time_to_connected_ms >= 0, JSON.stringify(ended.data.quality));
    // Each event went once to each endpoint that receives it, with the same id.
    assert.equal(new Set(global.map((r) => r.event.id)).size, global.length);
    assert.deepEqual(own.map((r) => r.event.id), global.filter((r) => r.event.type !== 'call.turn').map((r) => r.event.id));
    const deliveries = await server.cli('webhooks', 'deliveries', '--key', keyId, '--limit', '100');
    assert.equal(deliveries.code, 0, deliveries.stderr);
    assert.match(deliveries.stdout, new RegExp(`${ended.id}\\tcall\\.ended\\t${receiver.url('/key')}\\tdelivered\\t1\\t204\\t-`));
  });

  test('a tampered delivery, or one checked with another secret, fails verification', async () => {
    const delivery = receiver.received.find((r) => r.path === '/key')!;
    const headers = { 'webhook-id': String(delivery.headers['webhook-id']), 'webhook-timestamp': String(delivery.headers['webhook-timestamp']), 'webhook-signature': String(delivery.headers['webhook-signature']) };
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+={0,2}$/);
    const hook = new Webhook(keySecret);
    assert.ok(hook.verify(delivery.body, headers));
    assert.throws(() => hook.verify(delivery.body.replace('"call.', '"calls.'), headers), WebhookVerificationError);
    const flipped = headers['webhook-signature'].slice(0, 3) + (headers['webhook-signature'][3] === 'A' ? 'B' : 'A') + headers['webhook-signature'].slice(4);
    assert.throws(() => hook.verify(delivery.body, { ...headers, 'webhook-signature': flipped }), WebhookVerificationError);
    assert.throws(() => hook.verify(delivery.body, { ...headers, 'webhook-id': 'evt_other' }), WebhookVerificationError);
    assert.throws(() => new Webhook(globalSecret).verify(delivery.body, headers), WebhookVerificationError);
  });

  test('the store holds webhook secrets only encrypted; the logs hold none', () => {
    const dataDir = server.env.DATA_DIR!;
    const raw = Buffer.concat(readdirSync(dataDir).filter((f) => f.startsWith('parley.db')).map((f) => readFileSync(join(dataDir, f)))).toString('latin1');
    assert.ok(raw.includes(endpointId), 'the endpoint is in the store');
    for (const secret of [keySecret, globalSecret]) {
      assert.ok(!raw.includes(secret.slice(6)), 'no secret in the database files');
      assert.ok(!server.stderr().includes(secret.slice(6)) && !server.stdout().includes(secret.slice(6)), 'nor in the logs');
    }
  });

  test('a receiver answering 410 Gone has its endpoint disabled: nothing more is sent to it', async () => {
    receiver.statusFor = (path) => (path === '/gone' ? 410 : 204);
    const added = await server.cli('webhooks', 'add', '--key', keyId, '--url', receiver.url('/gone'));
    const goneId = /id:\s+(whep_\S+)/.exec(added.stdout)![1]!;
    const goneSecret = /secret:\s+(whsec_\S+)/.exec(added.stdout)![1]!;
    const callId = await session(apiKey);
    await until('the global call.ended', () => receiver.eventsOf('/global', callId, globalSecret), (rs) => types(rs).includes('call.ended'));
    await until('the endpoint disabled', async () => (await server.cli('webhooks', 'list', '--key', keyId)).stdout, (out) => new RegExp(`${goneId}\\t.*\\tdisabled `).test(out));
    const toGone = receiver.eventsOf('/gone', callId, goneSecret);
    assert.deepEqual(types(toGone), ['call.started'], 'only the event answered 410');
    const deliveries = (await server.cli('webhooks', 'deliveries', '--key', keyId)).stdout;
    assert.match(deliveries, new RegExp(`${toGone[0]!.event.id}\\tcall\\.started\\t${receiver.url('/gone')}\\tfailed\\t1\\t410\\t-\\tendpoint answered 410 Gone`));
    // Still delivered to the key's other endpoint.
    assert.deepEqual(types(receiver.eventsOf('/key', callId, keySecret)), ['call.started', 'call.ended']);
  });

  test('parley webhooks remove stops the deliveries to an endpoint', async () => {
    const removed = await server.cli('webhooks', 'remove', endpointId);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`removed ${endpointId}`));
    assert.ok(!(await server.cli('webhooks', 'list')).stdout.includes(endpointId));
    const callId = await session(apiKey);
    await until('the global call.ended', () => receiver.eventsOf('/global', callId, globalSecret), (rs) => types(rs).includes('call.ended'));
    assert.deepEqual(receiver.eventsOf('/key', callId, keySecret), []);
  });
});

describe('webhooks of a WebRTC call, through an outage and a SIGKILL', () => {
  const secret = newSecret();
  const receiver = new Receiver();
  let dataDir: string;
  let server: RunningServer;

  before(async () => {
    await receiver.start();
    dataDir = mkdtempSync(join(tmpdir(), 'parley-webhooks-'));
  });
  after(async () => {
    await server?.stop();
    await receiver.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = () => startServer({ DATA_DIR: dataDir, WEBHOOK_URL: receiver.url('/hook'), WEBHOOK_SECRET: secret, ...QUICK });

  test('an Orga-style WebRTC call gives call.started then call.ended', async () => {
    server = await start();
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { params: { model: 'audio-echo' } });
    await client.waitConnected();
    const started = await until('call.started', () => receiver.eventsOf('/hook', client.conversationId, secret), (rs) => rs.length > 0);
    assert.equal(started[0]!.event.data.transport, 'webrtc');
    // A second of the caller's audio, so the call has figures to report.
    const stopTone = await attachTone(client);
    await until('a second of audio sent', () => outboundAudio(client), (a) => a.packetsSent >= 50);
    stopTone();
    client.close();
    const events = await until('call.ended', () => receiver.eventsOf('/hook', client.conversationId, secret), (rs) => types(rs).includes('call.ended'));
    assert.deepEqual(types(events), ['call.started', 'call.ended']);
    assert.equal(events[1]!.event.data.transport, 'webrtc');
    assert.equal(events[1]!.event.data.state, 'ended');
    assert.ok(events[1]!.event.data.duration_s > 0);
    const { usage, quality } = events[1]!.event.data;
    assert.ok(usage.caller_audio_s > 0, JSON.stringify(usage));
    assert.equal(quality.transport, 'webrtc');
    assert.ok(quality.inbound.packets > 0 && quality.inbound.loss_pct >= 0 && quality.time_to_connected_ms > 0, JSON.stringify(quality));
  });

  test('a call that never connects gives call.failed alone (connect_timeout)', async () => {
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey), { withholdCandidates: true, params: { model: 'audio-echo' } });
    client.close();
    const events = await until('call.failed', () => receiver.eventsOf('/hook', client.conversationId, secret), (rs) => rs.length > 0, 25_000);
    assert.deepEqual(types(events), ['call.failed']);
    const { data } = events[0]!.event;
    assert.equal(data.state, 'failed');
    assert.equal(data.end_reason, 'connect_timeout');
    assert.equal(data.connected_at, null);
    assert.equal(data.duration_s, 0);
  });

  test('receiver down during a call, Parley killed with SIGKILL: after the restart every event is delivered, once', async () => {
    const port = receiver.port;
    await receiver.stop();
    const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}` } });
    const messages: any[] = [];
    ws.on('message', (m) => messages.push(JSON.parse(String(m))));
    const created = await until('session.created', () => messages.find((m) => m.type === 'session.created'), (m) => m !== undefined);
    const callId: string = created.session.id;
    ws.close();
    // Both events written and tried (and refused) at least once.
    const pending = await until(
      'failed attempts of both events',
      async () => JSON.parse((await server.cli('webhooks', 'deliveries', '--json')).stdout).filter((d: any) => JSON.parse(d.payload).data.call_id === callId),
      (ds: any[]) => ds.length === 2 && ds.every((d) => d.status === 'pending' && d.attempts >= 1 && d.last_status_code === null),
    );
    assert.deepEqual(pending.map((d: any) => d.event_type).sort(), ['call.ended', 'call.started']);
    assert.equal(await server.stop('SIGKILL', { keepData: true }), null);
    server = await start();
    await receiver.start(port);
    const events = await until('both events delivered', () => receiver.eventsOf('/hook', callId, secret), (rs) => types(rs).includes('call.ended') && types(rs).includes('call.started'));
    const delivered = await until(
      'both recorded delivered',
      async () => JSON.parse((await server.cli('webhooks', 'deliveries', '--json')).stdout).filter((d: any) => JSON.parse(d.payload).data.call_id === callId),
      (ds: any[]) => ds.every((d) => d.status === 'delivered'),
    );
    const ids = receiver.received.filter((r) => r.event.data.call_id === callId).map((r) => String(r.headers['webhook-id']));
    assert.equal(ids.length, 2, `each event once: ${ids.join(', ')}`);
    assert.deepEqual(new Set(ids), new Set(delivered.map((d: any) => d.event_id)));
    assert.deepEqual(new Set(events.map((r) => r.event.id)), new Set(pending.map((d: any) => d.event_id)), 'the same event ids as before the kill');
  });
});

describe('webhooks of a call placed with the published Orga SDK (@orga-ai/react in Chromium)', () => {
  const receiver = new Receiver();
  const secret = newSecret();
  let server: RunningServer;
  let browser: LaunchedBrowser;
  let app: OrgaApp;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-webhooks-orga-'));
    const question = join(dir, 'what-time-is-it.wav');
    speakToWav('What time is it?', question);
    await receiver.start();
    server = await startServer({ WEBHOOK_URL: receiver.url('/hook'), WEBHOOK_SECRET: secret, ...QUICK });
    [app, browser] = await Promise.all([startOrgaApp(server), launchBrowser({ fakeMicrophoneWav: question })]);
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await server?.stop();
    await receiver.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('call.started then call.ended, with the audio the microphone sent and the wire quality', async () => {
    const page = await openOrgaPage(browser, app, server.baseUrl);
    try {
      await page.click('#start');
      const o = await waitForOrga(page, 'connected', `o.state.connectionState === 'connected' && o.state.conversationId`);
      const callId = o.state.conversationId!;
      await until('call.started', () => receiver.eventsOf('/hook', callId, secret), (rs) => types(rs).includes('call.started'));
      // The fake microphone asks its question; once the agent has heard it, the app ends the session as its user would.
      await page.click('#enable-mic');
      await waitForOrga(page, 'the caller heard', `(o.state.conversationItems ?? []).some((i) => i.sender === 'user')`, 60_000);
      await page.click('#end');
      const events = await until('call.ended', () => receiver.eventsOf('/hook', callId, secret), (rs) => types(rs).includes('call.ended'), 20_000);
      assert.deepEqual(types(events), ['call.started', 'call.ended']);
      const { data } = events[1]!.event;
      assert.equal(data.transport, 'webrtc');
      assert.equal(data.state, 'ended');
      assert.ok(data.usage.caller_audio_s > 0, JSON.stringify(data.usage));
      assert.equal(data.quality.transport, 'webrtc');
      assert.ok(data.quality.inbound.packets > 0 && data.quality.time_to_connected_ms > 0, JSON.stringify(data.quality));
    } finally {
      await page.close();
    }
  });
});
