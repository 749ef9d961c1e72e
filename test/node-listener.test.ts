// The node-to-node listener (INTERNAL_HOST:INTERNAL_PORT) answers only the cluster's nodes: a
// request there must be signed by a node (src/auth/nodeAuth.ts). The attack of issue 44.10 is
// anyone who reaches that port claiming to be a node (`x-parley-forwarded-by`) to skip the
// per-address key-lookup limit: 700 made-up keys were 700 key lookups (401 each, never a 429).
// Now they are refused before any key is looked at, and so are unsigned requests and upgrades.
// Signed requests (the nodes' own) are what the two-node tests exercise (nodes, placement,
// sip-routing-nodes, key-limits-across-nodes, workers).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { freePort } from './helpers/coturn.ts';
import { http, startServer, type RunningServer } from './helpers/server.ts';

let server: RunningServer;
let internalUrl: string;

before(async () => {
  const port = await freePort();
  internalUrl = `http://127.0.0.1:${port}`;
  server = await startServer({ INTERNAL_PORT: String(port), TURN_ENABLED: 'false', STT_WORKERS: '1' });
});
after(async () => {
  await server?.stop();
});

const madeUpKey = () => 'sk_parley_ai_' + randomBytes(24).toString('hex');

/** The node-to-node listener's refusal: 401, Shape A, before anything else is looked at. */
function assertRefused(r: { status: number; body: any }, what: string) {
  assert.equal(r.status, 401, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, 'node_authentication_failed', what);
  assert.match(r.body.error.message, /node-to-node listener/, what);
}

describe("the node-to-node listener answers only the cluster's nodes", () => {
  test('700 made-up keys claiming to come from a node: each refused by the listener, no key looked up', async () => {
    const statuses = new Map<string, number>();
    for (let batch = 0; batch < 14; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => http(internalUrl, '/v1/realtime/models', { token: madeUpKey(), headers: { 'x-parley-forwarded-by': 'node-x' } })),
      );
      for (const a of answers) {
        const code = `${a.status} ${a.body?.error?.code}`;
        statuses.set(code, (statuses.get(code) ?? 0) + 1);
      }
    }
    // Before: 700 × "401 invalid_api_key" (each key looked up; the per-address limit skipped).
    assert.deepEqual(Object.fromEntries(statuses), { '401 node_authentication_failed': 700 });
    // The public port's limit for this address is untouched, and it still answers.
    assert.equal((await http(server.baseUrl, '/v1/realtime/models', { token: server.devKey })).status, 200);
  });

  test('unsigned requests, a forged signature, and WebSocket upgrades are refused; the public port answers as before', async () => {
    assertRefused(await http(internalUrl, '/v1/realtime/models', { token: server.devKey }), 'no signature, a real key');
    assertRefused(await http(internalUrl, '/healthz'), '/healthz');
    const forged = await http(internalUrl, '/v1/realtime/calls/conv_x/hangup', {
      method: 'POST',
      token: server.devKey,
      headers: { 'x-parley-forwarded-by': 'node-x', 'x-parley-node-auth': `t=${Math.floor(Date.now() / 1000)},s=${randomBytes(32).toString('base64url')}` },
    });
    assertRefused(forged, 'a made-up signature');
    const upgrade = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${internalUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${server.devKey}`, 'x-parley-forwarded-by': 'node-x' } });
      ws.once('open', () => {
        ws.close();
        resolve(101);
      });
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      ws.once('error', reject);
    });
    assert.equal(upgrade, 401, 'a WebSocket upgrade claiming to come from a node');
    assert.equal((await http(server.baseUrl, '/v1/realtime/models', { token: server.devKey })).status, 200, 'the public port');
    assert.equal(server.proc.exitCode, null);
  });
});
