// Outbound phone calls (POST /v1/realtime/sip/calls) to real user agents from Debian: baresip and
// linphonec answer (the agent speaks first and is heard), refuse, and let it ring out (CANCEL at the
// ring timeout); a phone registered with Parley's registrar is called by its user name; calls go
// out through Kamailio as the trunk (its digest challenge answered, record-routed, BYE both ways);
// and the toll-fraud guard: destinations outside the key's patterns (numbers however written: as
// SIP URIs of the trunk's host too), the trunk's credentials kept from other hosts, the cap on
// outbound calls per key, and the attempts' rate limit. Results on the record (end_reason,
// sip_status) and in the call.started / call.ended / call.failed webhooks.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { encodeWav, readWav } from '../src/media/audio/wav.ts';
import { BaresipStartError, freePort, startBaresip, type Baresip } from './helpers/baresip.ts';
import { startKamailio, type Kamailio } from './helpers/kamailio.ts';
import { startLinphone } from './helpers/linphone.ts';
import { rms } from './helpers/pcm.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { startSipPhone } from './helpers/sipPhone.ts';
import { until } from './helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.ts';

const SECRET = 'whsec_' + Buffer.from('outbound-webhook-secret-32-bytes!!').toString('base64');
const TRUNK_USER = 'parley-out';
const TRUNK_PASSWORD = 'trunk;pass@word';

let dir: string;
let receiver: WebhookReceiver;
const closers: (() => unknown)[] = [];

/** The webhook event `type` of call `id`, once delivered. */
const eventOf = (type: string, id: string): Promise<any> => until(`${type} for ${id}`, () => receiver.events.find((e) => e.type === type && e.data.call_id === id), Boolean, 60_000);

function client(server: RunningServer) {
  const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${server.baseUrl}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { authorization: `Bearer ${server.devKey}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  return {
    api,
    call: (body: Record<string, unknown>) => api('/v1/realtime/sip/calls', { body }),
    record: async (id: string) => (await api(`/v1/realtime/conversations/${id}`)).json() as Promise<any>,
    /** The record once its state is `state` (or any end, for 'over'); a call that ended instead of going active fails at once. */
    recordIn: async (id: string, state: 'active' | 'over') => {
      const over = (r: any) => r.state === 'ended' || r.state === 'failed';
      const record = await until(`call ${id} ${state}`, async () => (await api(`/v1/realtime/conversations/${id}`)).json() as Promise<any>, (r) => over(r) || r.state === state, 60_000);
      if (state === 'active') assert.equal(record.state, 'active', `call ${id} ended instead: ${record.end_reason} (${record.sip_status})`);
      return record;
    },
  };
}

/** A phone's WAV: silence, so that what it hears is the agent alone. */
function silenceWav(): string {
  const path = join(dir, 'silence.wav');
  writeFileSync(path, encodeWav([new Int16Array(8000 * 60)], 8000));
  return path;
}

/**
 * baresip as the called phone, listening on a port of its own (a free one unless given: one taken
 * meanwhile by another test's process makes it fail to start, and another is tried); with
 * `registrar` it registers with Parley and listens where the system puts it.
 */
async function baresip(name: string, opts: Omit<Parameters<typeof startBaresip>[1], 'wav' | 'user'> & { user?: string }): Promise<Baresip & { port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = opts.listenPort ?? (opts.registrar ? 0 : await freePort());
    try {
      const b = await startBaresip(join(dir, `${name}-${attempt}`), { user: 'bob', ...opts, wav: silenceWav(), ...(port ? { listenPort: port } : {}) });
      closers.push(() => b.stop());
      return Object.assign(b, { port });
    } catch (err) {
      if (!(err instanceof BaresipStartError && err.portTaken && opts.listenPort === undefined && attempt < 3)) throw err;
    }
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-outbound-'));
  receiver = await startWebhookReceiver(SECRET);
  closers.push(() => receiver.close());
});

after(async () => {
  for (const close of closers.reverse()) await close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('outbound calls straight to the phone', () => {
  let server: RunningServer;
  let sipPort: number;
  let api: ReturnType<typeof client>;

  before(async () => {
    sipPort = await freePort();
    server = await startServer({
      SIP_PORT: String(sipPort),
      SIP_USERS: 'alice:alice-password',
      SIP_OUTBOUND_ALLOW: '*=sip:*@127.0.0.1:*,alice,carol',
      SIP_OUTBOUND_MAX_CALLS_PER_KEY: '2',
      RATE_LIMIT_SIP_OUTBOUND_PER_KEY: '40',
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: SECRET,
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
      WEBHOOK_EVENTS: 'call.started,call.ended,call.failed',
    });
    closers.push(() => server.stop());
    api = client(server);
  });

  test('baresip answers: the agent speaks first and is heard; the sideband hears its keys; hung up through the API (BYE); record and webhooks say 200', async () => {
    const phone = await baresip('answers', { answerMode: 'auto' });
    const res = await api.call({ to: `sip:bob@127.0.0.1:${phone.port}`, from: '+15550001111', session: { instructions: 'You call to confirm an appointment.' } });
    assert.equal(res.status, 201, await res.clone().text());
    const body = (await res.json()) as any;
    assert.match(body.call_id, /^conv_/);
    assert.equal(body.to, `sip:bob@127.0.0.1:${phone.port}`);
    assert.equal(body.from, '+15550001111');
    await api.recordIn(body.call_id, 'active');
    assert.match(phone.out(), /From: <sip:\+15550001111@127\.0\.0\.1>/);
    // The agent spoke before the callee said anything (the phone sends silence).
    await until('the agent heard at the phone', () => phone.heard().map((f) => rms(readWav(readFileSync(f)).samples)), (levels) => levels.some((l) => l > 300), 60_000);
    // The app's sideband hears the call, as for an incoming one: the callee's key presses.
    const sideband = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?call_id=${body.call_id}`, { headers: { authorization: `Bearer ${server.devKey}` } });
    closers.push(() => sideband.close());
    const digits: string[] = [];
    sideband.on('message', (data) => {
      const event = JSON.parse(String(data));
      if (event.type === 'parley.input_audio_buffer.dtmf') digits.push(event.digit);
    });
    await new Promise((resolve, reject) => sideband.once('open', resolve).once('error', reject));
    await phone.command('sndcode', '7#');
    await until('the key presses on the sideband', () => digits.join(''), (d) => d === '7#', 30_000);
    assert.equal((await api.api(`/v1/realtime/calls/${body.call_id}/hangup`, { body: {} })).status, 200);
    await until('the BYE at the phone', phone.out, (o) => /\nBYE sip:/.test(o), 30_000);
    const record = await api.recordIn(body.call_id, 'over');
    assert.equal(record.state, 'ended');
    assert.equal(record.sip_status, 200);
    assert.equal(record.end_reason, 'hangup_request');
    const started = await eventOf('call.started', body.call_id);
    assert.equal(started.data.transport, 'sip');
    const ended = await eventOf('call.ended', body.call_id);
    assert.equal(ended.data.sip_status, 200);
  });

  test('baresip refuses the ringing call (486 Busy Here): failed busy, in the record and call.failed', async () => {
    const phone = await baresip('refuses', { answerMode: 'manual' });
    const res = await api.call({ to: `sip:bob@127.0.0.1:${phone.port}` });
    assert.equal(res.status, 201);
    const { call_id } = (await res.json()) as any;
    await until('the phone ringing', phone.out, (o) => /SIP\/2\.0 180 Ringing/.test(o), 30_000);
    await phone.command('hangup');
    const record = await api.recordIn(call_id, 'over');
    assert.equal(record.state, 'failed');
    assert.equal(record.sip_status, 486);
    assert.equal(record.end_reason, 'busy');
    const failed = await eventOf('call.failed', call_id);
    assert.equal(failed.data.sip_status, 486);
    assert.equal(failed.data.end_reason, 'busy');
  });

  test('nobody answers baresip: CANCEL at the ring timeout, failed no_answer with 487', async () => {
    const phone = await baresip('rings-out', { answerMode: 'manual' });
    const res = await api.call({ to: `sip:bob@127.0.0.1:${phone.port}`, ring_timeout_s: 5 });
    assert.equal(res.status, 201);
    const { call_id } = (await res.json()) as any;
    const record = await api.recordIn(call_id, 'over');
    assert.equal(record.state, 'failed');
    assert.equal(record.end_reason, 'no_answer');
    assert.equal(record.sip_status, 487);
    assert.match(phone.out(), /\nCANCEL sip:/);
    assert.equal((await eventOf('call.failed', call_id)).data.end_reason, 'no_answer');
  });

  test('linphonec (a second user agent) declines a call, then answers one and hangs up itself: BYE from the callee ends it', async () => {
    const phone = await startLinphone(join(dir, 'linphone'));
    closers.push(() => phone.stop());
    const port = Number(/sip_port=(\d+)/.exec(readFileSync(join(dir, 'linphone', 'linphonerc'), 'utf8'))![1]);
    const declined = (await (await api.call({ to: `sip:linphone@127.0.0.1:${port}` })).json()) as any;
    await until('linphonec ringing', phone.out, (o) => /SIP\/2\.0 180 Ringing/.test(o), 30_000);
    phone.command('terminate');
    const refused = await api.recordIn(declined.call_id, 'over');
    assert.equal(refused.state, 'failed');
    // linphonec declines with 603 Decline.
    assert.equal(refused.sip_status, 603);
    assert.equal(refused.end_reason, 'rejected');
    phone.command('autoanswer enable');
    const res = await api.call({ to: `sip:linphone@127.0.0.1:${port}`, wait_for_callee: true });
    assert.equal(res.status, 201, await res.clone().text());
    const { call_id } = (await res.json()) as any;
    await api.recordIn(call_id, 'active');
    phone.command('terminate');
    const record = await api.recordIn(call_id, 'over');
    assert.equal(record.state, 'ended');
    assert.equal(record.end_reason, 'hangup');
    assert.equal(record.sip_status, 200);
  });

  test('a phone registered with the registrar is called by its user name', async () => {
    const phone = await baresip('registered', { user: 'alice', password: 'alice-password', registrar: sipPort, answerMode: 'auto' });
    await until('alice registered', phone.out, (o) => /SIP\/2\.0 200 OK[\s\S]*CSeq: \d+ REGISTER/.test(o), 30_000);
    const res = await api.call({ to: 'alice' });
    assert.equal(res.status, 201, await res.clone().text());
    const { call_id } = (await res.json()) as any;
    await api.recordIn(call_id, 'active');
    assert.equal((await api.api(`/v1/realtime/calls/${call_id}/hangup`, { body: {} })).status, 200);
    assert.equal((await api.recordIn(call_id, 'over')).sip_status, 200);
    // Nobody registered as carol: 404 in OpenAI's error shape.
    const unknown = await api.call({ to: 'carol' });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as any).error.code, 'not_registered');
  });

  test('the toll-fraud guard: destinations outside the patterns (403), bad ones (400), the per-key cap (429), the attempts rate limit (429)', async () => {
    const refused = await api.call({ to: '+4930123456' });
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as any).error.code, 'destination_not_allowed');
    const bad = await api.call({ to: 'sip:bob@host with spaces' });
    assert.equal(bad.status, 400);
    // A phone that rings for ever (180 to every INVITE): two calls ring, the third is past the cap.
    const ringer = await startSipPhone('ring');
    closers.push(() => ringer.close());
    const ringing = [];
    for (let i = 0; i < 2; i++) ringing.push((await (await api.call({ to: `sip:ring@127.0.0.1:${ringer.port}`, ring_timeout_s: 60 })).json()) as any);
    const third = await api.call({ to: `sip:ring@127.0.0.1:${ringer.port}` });
    assert.equal(third.status, 429);
    assert.equal(((await third.json()) as any).error.code, 'outbound_calls_exceeded');
    for (const r of ringing) assert.equal((await api.api(`/v1/realtime/calls/${r.call_id}/hangup`, { body: {} })).status, 200);
    // Hung up while ringing: CANCELled.
    await until('the CANCELs at the ringing phone', () => ringer.heard.filter((r) => r.method === 'CANCEL').length, (n) => n >= 2, 30_000);
    // Every attempt counts, refused ones too: past 40 in the window, 429 with Retry-After.
    let limited: Response | undefined;
    for (let i = 0; i < 45 && !limited; i++) {
      const r = await api.call({ to: '+4930123456' });
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, 'the rate limit answered 429');
    assert.ok(Number(limited!.headers.get('retry-after')) > 0);
  });
});

describe('outbound calls through Kamailio as the trunk', () => {
  let server: RunningServer;
  let kamailio: Kamailio;
  let api: ReturnType<typeof client>;
  /** Where Kamailio delivers calls to numbers: the phone standing for the public network. */
  let phonePort: number;

  before(async () => {
    const sipPort = await freePort();
    phonePort = await freePort();
    mkdirSync(join(dir, 'kamailio'));
    kamailio = await startKamailio(join(dir, 'kamailio'), sipPort, { challenge: { user: TRUNK_USER, password: TRUNK_PASSWORD }, numbersTo: phonePort });
    closers.push(() => kamailio.stop());
    server = await startServer({
      SIP_PORT: String(sipPort),
      SIP_OUTBOUND_TRUNK: `sip:${TRUNK_USER}:${encodeURIComponent(TRUNK_PASSWORD)}@127.0.0.1:${kamailio.port}`,
      // The docs' example (numbers, a registered user, the PBX's users), with `*` (registered users)
      // and one host besides the trunk.
      SIP_OUTBOUND_ALLOW: `*=+1555*,alice,*,sip:*@127.0.0.1:${kamailio.port},sip:*@127.0.0.1:${phonePort}`,
    });
    closers.push(() => server.stop());
    api = client(server);
  });

  test("a number and a SIP URI: its digest challenge answered, record-routed; the callee's BYE and ours both go through it", async () => {
    // The phone is the number's (baresip takes calls for its own user only).
    const phone = await baresip('behind-kamailio', { user: '+15550100', answerMode: 'auto', listenPort: phonePort });
    for (const [to, hangUp] of [['+15550100', 'callee'], [`sip:+15550100@127.0.0.1:${kamailio.port}`, 'parley']] as const) {
      const res = await api.call({ to });
      assert.equal(res.status, 201, await res.clone().text());
      const { call_id } = (await res.json()) as any;
      await api.recordIn(call_id, 'active');
      assert.match(phone.out(), new RegExp(`Record-Route: <sip:127\\.0\\.0\\.1:${kamailio.port};lr`));
      if (hangUp === 'callee') await phone.command('hangup');
      else assert.equal((await api.api(`/v1/realtime/calls/${call_id}/hangup`, { body: {} })).status, 200);
      const record = await api.recordIn(call_id, 'over');
      assert.equal(record.state, 'ended');
      assert.equal(record.end_reason, hangUp === 'callee' ? 'hangup' : 'hangup_request');
    }
    // Both BYEs went through the proxy: it relayed one each way.
    assert.equal((kamailio.out().match(/relaying in-dialog BYE/g) ?? []).length, 2);
    assert.match(kamailio.out(), /challenged INVITE/);
    // The number went as sip:NUMBER@trunk.
    assert.match(phone.out(), new RegExp(`INVITE sip:\\+15550100@127\\.0\\.0\\.1:${kamailio.port} SIP/2\\.0`));
  });

  test("toll fraud: a number outside the patterns is refused however it is written; a SIP URI of another host goes without the trunk's credentials", async () => {
    // +1900 is no pattern's: not as a number, nor as a SIP URI of the trunk's host, nor by `*`.
    const attempts: Record<string, number> = {};
    for (const to of ['+19005551234', 'tel:+19005551234', `sip:+19005551234@127.0.0.1:${kamailio.port}`, `sip:0019005551234@127.0.0.1:${kamailio.port}`, `sip:+19005551234@127.0.0.1:${phonePort}`]) {
      const res = await api.call({ to, wait_for_callee: true });
      attempts[to] = res.status;
      if (res.status === 201) await api.api(`/v1/realtime/calls/${((await res.json()) as any).call_id}/hangup`, { body: {} });
    }
    // An allowed number at a host that is not the trunk: sent through it, but its challenge goes unanswered.
    const res = await api.call({ to: `sip:+15550100@127.0.0.1:${phonePort}`, wait_for_callee: true });
    const otherHost = res.status === 201 ? await api.recordIn(((await res.json()) as any).call_id, 'over') : { status: res.status };
    assert.deepEqual(
      { attempts, otherHost: [otherHost.state, otherHost.end_reason, otherHost.sip_status] },
      { attempts: Object.fromEntries(Object.keys(attempts).map((to) => [to, 403])), otherHost: ['failed', 'rejected', 407] },
    );
  });
});
