// Routing of SIP calls OpenAI's way, with a real SIP user agent (Debian's baresip) on loopback and a
// webhook receiver acting as the app: each realtime.call.incoming delivery is verified with
// standardwebhooks, and the app accepts the call with its own instructions (seen on the sideband's
// session.created and in the record), rejects it (baresip sees 486), refers it (302 with the target;
// once answered, a REFER: baresip calls the target and the first call ends),
// or does nothing (the default agent answers after SIP_ROUTING_TIMEOUT_MS); a caller hanging up while
// it rings gets 487 and the call cannot be accepted after; a call never answered gets no BYE.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { encodeWav } from '../src/media/audio/wav.ts';
import { startBaresip, freePort, type Baresip } from './helpers/baresip.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.ts';

const USER = 'alice';
const PASSWORD = 'correct-horse-battery';
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const ROUTING_TIMEOUT_MS = 8000;
const INSTRUCTIONS = 'You are the support line of the routing test.';
const REFER_TARGET = 'sip:frontdesk@127.0.0.1:5999';

let server: RunningServer;
let receiver: WebhookReceiver;
let sipPort: number;
let dir: string;
const callers: Baresip[] = [];
/** Every realtime.call.incoming delivery, verified. */
const incoming: any[] = [];
/** What the app's accept, reject and refer requests were answered. */
const decisions = new Map<string, { status: number; body: any }>();

function api(path: string, body: unknown): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.devKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The app: decides by the number dialled (the To user). */
async function decide(event: any): Promise<void> {
  const id = event.data.call_id;
  const to = event.data.sip_headers.find((h: any) => h.name === 'To')?.value ?? '';
  const user = /sip:([^@]+)@/.exec(to)?.[1];
  const route =
    user === 'support'
      ? api(`/v1/realtime/calls/${id}/accept`, { type: 'realtime', instructions: INSTRUCTIONS, audio: { output: { voice: 'alloy' } } })
      : user === 'busy'
        ? api(`/v1/realtime/calls/${id}/reject`, { status_code: 486 })
        : user === 'moved'
          ? api(`/v1/realtime/calls/${id}/refer`, { target_uri: REFER_TARGET })
          : undefined; // 'late' and 'hold': no decision.
  if (!route) return;
  const res = await route;
  decisions.set(id, { status: res.status, body: await res.json() });
}

/** What the app's decision on call `id` was answered. */
const decision = (id: string) => until(`the decision on ${id} answered`, () => decisions.get(id), Boolean, 30_000);

async function conversation(id: string): Promise<any> {
  const res = await fetch(`${server.baseUrl}/v1/realtime/conversations/${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
  return res.json();
}

/** The id Parley gave the call (its 180 Ringing names it). */
async function ringingCallId(caller: Baresip): Promise<string> {
  const out = await until('the call ringing', caller.out, (o) => /SIP\/2\.0 180 Ringing[\s\S]*?X-Parley-Call-Id: (conv_\S+)/.test(o), 60_000);
  return /SIP\/2\.0 180 Ringing[\s\S]*?X-Parley-Call-Id: (conv_\S+)/.exec(out)![1]!;
}

/** A BYE in baresip's trace of what it received from Parley. */
const noByeFromParley = () => new RegExp(`UDP 127\\.0\\.0\\.1:${sipPort} -> [^\\n]+\\r?\\nBYE `);

const answered = (caller: Baresip) => until('the 200 OK', caller.out, (o) => /SIP\/2\.0 200 OK\r?\n(?:[^\r\n]*\r?\n)*?CSeq: \d+ INVITE/.test(o), 60_000);

async function dial(name: string, user: string): Promise<Baresip> {
  const wav = join(dir, 'silence.wav');
  const b = await startBaresip(join(dir, name), { user: USER, password: PASSWORD, wav });
  callers.push(b);
  await b.command('dial', `sip:${user}@127.0.0.1:${sipPort}`);
  return b;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-routing-'));
  writeFileSync(join(dir, 'silence.wav'), encodeWav([new Int16Array(120_000 * 8)], 8000));
  receiver = await startWebhookReceiver(SECRET, (event) => {
    if (event.type !== 'realtime.call.incoming') return;
    incoming.push(event);
    void decide(event);
  });
  sipPort = await freePort();
  server = await startServer({
    SIP_PORT: String(sipPort),
    SIP_USERS: `${USER}:${PASSWORD}`,
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: SECRET,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    WEBHOOK_EVENTS: 'realtime.call.incoming,call.ended,call.failed',
    SIP_ROUTING_TIMEOUT_MS: String(ROUTING_TIMEOUT_MS),
    // Ringing counts towards connecting: room for the routing timeout on a loaded machine.
    CALL_CONNECT_TIMEOUT_MS: '30000',
  });
});

after(async () => {
  for (const c of callers) await c.stop();
  await server?.stop();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('SIP call routing (realtime.call.incoming)', () => {
  test('the app accepts with its own instructions: the call runs with them', async () => {
    const b = await dial('accept', 'support');
    const id = await ringingCallId(b);
    await answered(b);
    const event = await until('a signed realtime.call.incoming for the call', (): any => incoming.find((e) => e.data.call_id === id), (e) => e !== undefined, 30_000);
    const header = (name: string) => event.data.sip_headers.find((h: any) => h.name === name)?.value;
    assert.match(header('From'), /sip:alice@127\.0\.0\.1/);
    assert.match(header('To'), /sip:support@127\.0\.0\.1/);
    assert.ok(header('Call-ID'), 'the Call-ID header');
    assert.equal(header('Authorization'), undefined, "the caller's credentials are not passed on");
    assert.deepEqual(await decision(id), { status: 200, body: {} });

    await until('the call up', () => conversation(id), (c) => c.connected_at !== null, 30_000);
    const socket = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
    const created = await new Promise<any>((resolve, reject) => {
      socket.on('message', (data) => {
        const e = JSON.parse(String(data));
        if (e.type === 'session.created') resolve(e);
      });
      socket.once('error', reject);
    });
    socket.close();
    assert.equal(created.session.instructions, INSTRUCTIONS);
    assert.equal((await conversation(id)).params.instructions, INSTRUCTIONS);

    const again = await api(`/v1/realtime/calls/${id}/accept`, { type: 'realtime' });
    assert.equal(again.status, 409);
    assert.equal((await again.json()).error.code, 'call_not_ringing');

    await b.command('hangup');
    const record = await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
    assert.equal(record.end_reason, 'hangup');
  });

  test('the app transfers an answered call: REFER, baresip calls the target, the first call ends referred', async () => {
    const b = await dial('transfer', 'support');
    const first = await ringingCallId(b);
    await until('the call up', () => conversation(first), (c) => c.connected_at !== null, 60_000);
    // The target is this server again (the app accepts calls to "support").
    const target = `sip:support@127.0.0.1:${sipPort}`;
    const refer = await api(`/v1/realtime/calls/${first}/refer`, { target_uri: target });
    assert.deepEqual([refer.status, await refer.json()], [200, {}]);
    const out = await until('baresip got the REFER', b.out, (o) => new RegExp(`\\nREFER sip:[^\\r\\n]+\\r?\\n(?:[^\\r\\n]*\\r?\\n)*?Refer-To: <${target}>`).test(o), 30_000);
    assert.match(out, /SIP\/2\.0 202 Accepted/);
    // baresip calls the target: a second call, which the app accepts…
    const callIds = () => [...b.out().matchAll(/X-Parley-Call-Id: (conv_\S+)/g)].map((m) => m[1]!);
    const second = (await until('the transferred call answered', callIds, (ids) => ids.some((id) => id !== first && decisions.has(id)), 60_000)).find((id) => id !== first)!;
    assert.deepEqual(await decision(second), { status: 200, body: {} });
    // …and once it is answered, baresip's NOTIFY says so and the first call ends with a BYE.
    const record = await until('the first call ended', () => conversation(first), (c) => c.state === 'ended', 60_000);
    assert.equal(record.end_reason, 'referred');
    assert.match(b.out(), /\nNOTIFY sip:[^\r\n]+\r?\n(?:[^\r\n]*\r?\n)*?Event: refer/);
    assert.match(b.out(), noByeFromParley(), 'the first call ended with a BYE from Parley');
    // The transferred call goes on until the caller hangs up.
    await until('the transferred call up', () => conversation(second), (c) => c.connected_at !== null, 30_000);
    await b.command('hangup');
    assert.equal((await until('the transferred call ended', () => conversation(second), (c) => c.state === 'ended', 30_000)).end_reason, 'hangup');
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /parley_sip_routing_total\{decision="accept",by="app"\} [1-9]/);
    assert.match(metrics, /parley_sip_routing_total\{decision="refer",by="transfer"\} 1\n/);
  });

  test('the app rejects: baresip sees 486 Busy Here, the record says rejected', async () => {
    const b = await dial('reject', 'busy');
    const id = await ringingCallId(b);
    await until('baresip got the 486', b.out, (o) => /SIP\/2\.0 486 Busy Here/.test(o), 60_000);
    assert.deepEqual(await decision(id), { status: 200, body: {} });
    const record = await until('the record ended', () => conversation(id), (c) => c.state !== 'connecting', 30_000);
    assert.equal(record.end_reason, 'rejected');
    assert.equal(record.connected_at, null);
    assert.doesNotMatch(b.out(), noByeFromParley(), 'a call never answered gets no BYE');
    const late = await api(`/v1/realtime/calls/${id}/accept`, { type: 'realtime' });
    assert.equal(late.status, 404);
    assert.equal((await late.json()).error.code, 'call_not_found');
  });

  test('the app refers before answering: 302 Moved Temporarily to the target', async () => {
    const b = await dial('refer', 'moved');
    const id = await ringingCallId(b);
    const out = await until('baresip got the 302', b.out, (o) => /SIP\/2\.0 302 Moved Temporarily\r?\n(?:[^\r\n]*\r?\n)*?Contact: <sip:frontdesk@127\.0\.0\.1:5999>/.test(o), 60_000);
    assert.match(out, /SIP\/2\.0 302 Moved Temporarily/);
    const record = await until('the record ended', () => conversation(id), (c) => c.state !== 'connecting', 30_000);
    assert.equal(record.end_reason, 'referred');
    assert.doesNotMatch(b.out(), noByeFromParley(), 'a call never answered gets no BYE');
  });

  test('no decision in time: the default agent answers after SIP_ROUTING_TIMEOUT_MS', async () => {
    const dialled = Date.now();
    const b = await dial('timeout', 'late');
    const id = await ringingCallId(b);
    await answered(b);
    assert.ok(Date.now() - dialled >= ROUTING_TIMEOUT_MS, `answered after ${Date.now() - dialled} ms`);
    await until('the app was told', () => incoming.some((e) => e.data.call_id === id), Boolean, 30_000);
    const record = await until('the call up', () => conversation(id), (c) => c.connected_at !== null, 30_000);
    assert.notEqual(record.params.instructions, INSTRUCTIONS);
    await b.command('hangup');
    await until('the record ended', () => conversation(id), (c) => c.state === 'ended', 30_000);
  });

  test('the caller hangs up while it rings: 487, and the call cannot be accepted after', async () => {
    const b = await dial('cancel', 'hold');
    const id = await ringingCallId(b);
    await b.command('hangup');
    await until('baresip got the 487', b.out, (o) => /SIP\/2\.0 487 Request Terminated/.test(o), 60_000);
    const record = await until('the record ended', () => conversation(id), (c) => c.state !== 'connecting', 30_000);
    assert.equal(record.end_reason, 'cancelled');
    assert.doesNotMatch(b.out(), noByeFromParley(), 'a call never answered gets no BYE');
    const late = await api(`/v1/realtime/calls/${id}/accept`, { type: 'realtime' });
    assert.equal(late.status, 404);
  });

  test('a ringing call hung up through the API: the caller gets 480, no BYE', async () => {
    const b = await dial('hangup', 'hold');
    const id = await ringingCallId(b);
    const hangup = await api(`/v1/realtime/calls/${id}/hangup`, {});
    assert.equal(hangup.status, 200);
    await until('baresip got the 480', b.out, (o) => /SIP\/2\.0 480 Temporarily Unavailable/.test(o), 60_000);
    assert.doesNotMatch(b.out(), noByeFromParley(), 'a call never answered gets no BYE');
    const record = await until('the record ended', () => conversation(id), (c) => c.state !== 'connecting', 30_000);
    assert.equal(record.end_reason, 'hangup_request');
  });

  test('bad decisions are 400 and unknown calls 404, in OpenAI error objects', async () => {
    const status = await api('/v1/realtime/calls/conv_unknown/reject', { status_code: 200 });
    assert.equal(status.status, 400);
    assert.equal((await status.json()).error.param, 'status_code');
    const target = await api('/v1/realtime/calls/conv_unknown/refer', { target_uri: 'http://example.com/\r\nX: y' });
    assert.equal(target.status, 400);
    const unknown = await api('/v1/realtime/calls/conv_unknown/reject', {});
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, 'call_not_found');
  });
});
