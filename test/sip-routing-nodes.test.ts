// A decision on a ringing SIP call sent to another node than the one the INVITE reached (two nodes
// on one PostgreSQL database, the app's request behind a load balancer): it is passed to the node
// carrying the call, which answers baresip with the app's session.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeWav } from '../src/media/audio/wav.ts';
import { startBaresip, freePort, type Baresip } from './helpers/baresip.ts';
import { scratchDatabase } from './helpers/postgres.ts';
import { startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const INSTRUCTIONS = 'You answer calls that rang on the other node.';

let database: { url: string; drop(): Promise<void> };
let nodeA: RunningServer;
let nodeB: RunningServer;
let receiver: WebhookReceiver;
let caller: Baresip | undefined;
let sipPort: number;
let dir: string;
const incoming: any[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-sip-nodes-'));
  writeFileSync(join(dir, 'silence.wav'), encodeWav([new Int16Array(60_000 * 8)], 8000));
  receiver = await startWebhookReceiver(SECRET, (event) => {
    if (event.type === 'realtime.call.incoming') incoming.push(event);
  });
  database = await scratchDatabase('parley_sip_nodes');
  sipPort = await freePort();
  const shared = {
    DATABASE_URL: database.url,
    API_KEY_PEPPER: randomBytes(32).toString('hex'),
    TURN_SECRETS: randomBytes(24).toString('hex'),
    NODE_HEARTBEAT_MS: '500',
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: SECRET,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    WEBHOOK_EVENTS: 'realtime.call.incoming',
    // Long enough for the decision to travel through the other node on a loaded machine.
    SIP_ROUTING_TIMEOUT_MS: '20000',
    CALL_CONNECT_TIMEOUT_MS: '30000',
  };
  nodeA = await startServer({ ...shared, NODE_ID: 'node-a', SIP_PORT: String(sipPort) });
  nodeB = await startServer({ ...shared, NODE_ID: 'node-b', CREATE_DEV_KEY: 'false' });
});

after(async () => {
  await caller?.stop();
  await nodeA?.stop();
  await nodeB?.stop();
  await database?.drop();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('accept sent to the other node reaches the node carrying the ringing call', async () => {
  caller = await startBaresip(join(dir, 'caller'), { user: 'alice', wav: join(dir, 'silence.wav') });
  await caller.command('dial', `sip:support@127.0.0.1:${sipPort}`);
  const event = await until('the incoming-call webhook', (): any => incoming[0], (e) => e !== undefined, 60_000);
  const id = event.data.call_id;
  const accept = await fetch(`${nodeB.baseUrl}/v1/realtime/calls/${id}/accept`, {
    method: 'POST',
    headers: { authorization: `Bearer ${nodeA.devKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'realtime', instructions: INSTRUCTIONS }),
  });
  assert.equal(accept.status, 200, await accept.clone().text());
  assert.equal(accept.headers.get('x-parley-node'), 'node-a', "node A's answer, relayed by node B");
  await until('the 200 OK', caller.out, (o) => /SIP\/2\.0 200 OK\r?\n(?:[^\r\n]*\r?\n)*?CSeq: \d+ INVITE/.test(o), 60_000);
  const record = await until(
    'the call up',
    async () => (await fetch(`${nodeB.baseUrl}/v1/realtime/conversations/${id}`, { headers: { authorization: `Bearer ${nodeA.devKey}` } })).json() as Promise<any>,
    (c) => c.connected_at !== null && c.connected_at !== undefined,
    30_000,
  );
  assert.equal(record.params.instructions, INSTRUCTIONS);
  const unknown = await fetch(`${nodeB.baseUrl}/v1/realtime/calls/conv_unknown/accept`, {
    method: 'POST',
    headers: { authorization: `Bearer ${nodeA.devKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'realtime' }),
  });
  assert.equal(unknown.status, 404);
});
