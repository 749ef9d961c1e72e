// Webhooks turned against the node (issue 33), as the attacks: URLs pointing at what only the node
// reaches (its own node-to-node listener, the cloud metadata address, a loopback service) are refused
// by `parley webhooks add` and WEBHOOK_URL at start; a receiver's host that resolved to an allowed
// address when it was added and to a loopback one at send time (a tiny DNS server on 127.0.0.1
// that Parley is pointed at with WEBHOOK_DNS_SERVERS, switched between the two) is not sent to;
// an HTTPS receiver, reached by the address checked, still has its certificate checked by name;
// a receiver answering with a 300 MB body does not grow the node's memory. Everything stays on
// loopback: 127.0.0.2 plays the allowed outside receiver. The tests wait for events; the one figure
// asserted is memory (RSS), not time.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { DnsServer } from './helpers/dnsServer.ts';
import { freePort } from './helpers/coturn.ts';
import { PARLEY, metric, startServer, type RunningServer } from './helpers/server.ts';
import { makeCertificate } from './helpers/tls.ts';
import { until } from './helpers/wait.ts';

const MiB = 1024 * 1024;
const FLOOD_BYTES = 300 * MiB;

/** An HTTP server on `host` that counts requests by path and answers `answer` (204 by default). */
class Listener {
  readonly paths: string[] = [];
  answer: (res: ServerResponse) => void = (res) => void res.writeHead(204).end();
  private server: Server | undefined;

  /** `tls`: serve HTTPS with this certificate. */
  async start(host: string, port = 0, tls?: { cert: string; key: string }): Promise<this> {
    const handler: RequestListener = (req, res) => {
      this.paths.push(req.url ?? '/');
      req.resume();
      req.on('end', () => this.answer(res));
    };
    this.server = tls ? createTlsServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, handler) : createServer(handler);
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, resolve);
    });
    return this;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

/** Answers 200 with a `bytes` body written 1 MiB at a time as the reader takes it; `sent` counts what left. */
function flood(bytes: number, sent: { bytes: number }) {
  const chunk = Buffer.alloc(MiB, 'x');
  return (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(bytes) });
    res.on('error', () => {});
    const more = () => {
      while (sent.bytes < bytes && !res.destroyed) {
        sent.bytes += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
    };
    more();
  };
}

describe('where webhooks may go, and what a receiver may answer', () => {
  const dns = new DnsServer();
  const outside = new Listener();
  const trap = new Listener();
  const global = new Listener();
  const secure = new Listener();
  let certDir: string;
  let internalPort: number;
  let server: RunningServer;
  let keyId: string;
  let apiKey: string;

  before(async () => {
    await dns.start();
    // The receiver "outside" on 127.0.0.2, and a service only the node should reach on the same port of 127.0.0.1.
    await outside.start('127.0.0.2');
    await trap.start('127.0.0.1', outside.port);
    await global.start('127.0.0.2');
    certDir = mkdtempSync(join(tmpdir(), 'parley-webhook-tls-'));
    const tls = makeCertificate(certDir, 'secure.parley.test');
    await secure.start('127.0.0.2', 0, tls);
    internalPort = await freePort();
    server = await startServer({
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.2/32',
      WEBHOOK_DNS_SERVERS: dns.address,
      WEBHOOK_URL: `http://127.0.0.2:${global.port}/global`,
      WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
      WEBHOOK_EVENTS: 'call.started',
      WEBHOOK_RETRY_MAX_MS: '300',
      WEBHOOK_POLL_MS: '100',
      INTERNAL_PORT: String(internalPort),
      // The node trusts the HTTPS receiver's self-signed certificate, for its name only.
      NODE_EXTRA_CA_CERTS: tls.cert,
    });
    const created = await server.cli('keys', 'create', '--name', 'destinations');
    apiKey = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
    keyId = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
  });
  after(async () => {
    await server?.stop();
    await Promise.all([outside.stop(), trap.stop(), global.stop(), secure.stop(), dns.stop()]);
    rmSync(certDir, { recursive: true, force: true });
  });

  /** `parley` with the server's settings and `env` over them. */
  async function cli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const r = await promisify(execFile)(process.execPath, [...PARLEY, ...args], { env: { ...server.env, ...env } });
      return { code: 0, ...r };
    } catch (e) {
      const x = e as { code: number; stdout: string; stderr: string };
      return { code: x.code, stdout: x.stdout, stderr: x.stderr };
    }
  }

  /** Opens an OpenAI WebSocket session and closes it: its call.started is written. Returns the call id. */
  async function session(): Promise<string> {
    const ws = new WebSocket(`${server.baseUrl.replace('http', 'ws')}/v1/realtime?model=gpt-realtime`, { headers: { authorization: `Bearer ${apiKey}` } });
    const messages: any[] = [];
    ws.on('message', (m) => messages.push(JSON.parse(String(m))));
    const created = await until('session.created', () => messages.find((m) => m.type === 'session.created'), (m) => m !== undefined);
    ws.close();
    return created.session.id;
  }

  async function deliveriesOf(callId: string, url: string): Promise<any[]> {
    const list = JSON.parse((await server.cli('webhooks', 'deliveries', '--json', '--limit', '1000')).stdout);
    return list.filter((d: any) => d.url === url && JSON.parse(d.payload).data.call_id === callId);
  }

  test('webhooks add refuses internal URLs, one line each, and keeps none of them', async () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{}, 'http://169.254.169.254/latest/meta-data/', /^parley: --url: 169\.254\.169\.254 is a cloud metadata address, refused unless WEBHOOK_ALLOWED_CIDRS allows it\n$/],
      [{ WEBHOOK_ALLOWED_CIDRS: '' }, `http://127.0.0.1:${trap.port}/hook`, /^parley: --url: 127\.0\.0\.1 is a loopback address, refused unless WEBHOOK_ALLOWED_CIDRS allows it\n$/],
      [{}, `http://[::ffff:127.0.0.1]:${trap.port}/hook`, /^parley: --url: 127\.0\.0\.1 is a loopback address/],
      [{}, 'http://[fd00:ec2::254]/latest/', /^parley: --url: fd00:ec2::254 is a cloud metadata address/],
      // Loopback allowed, the node's own node-to-node listener still is not.
      [{ WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' }, `http://127.0.0.1:${internalPort}/`, new RegExp(`^parley: --url: 127\\.0\\.0\\.1 port ${internalPort} is one of Parley's own listeners\\n$`)],
      [{}, 'http://nowhere.parley.test/hook', /^parley: --url: nowhere\.parley\.test does not resolve \(/],
    ];
    for (const [env, url, message] of cases) {
      const r = await cli(env, 'webhooks', 'add', '--key', keyId, '--url', url);
      assert.equal(r.code, 1, `${url}: ${r.stdout}`);
      assert.match(r.stderr, message);
    }
    const list = JSON.parse((await server.cli('webhooks', 'list', '--key', keyId, '--json')).stdout);
    assert.deepEqual(list, []);
  });

  test('a WEBHOOK_URL on loopback without WEBHOOK_ALLOWED_CIDRS stops the start, in one line', async () => {
    const start = startServer({ WEBHOOK_URL: `http://127.0.0.1:${trap.port}/global`, WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}` });
    await assert.rejects(start, /server exited with 1:[\s\S]*parley: WEBHOOK_URL: 127\.0\.0\.1 is a loopback address, refused unless WEBHOOK_ALLOWED_CIDRS allows it\n/);
  });

  test('a host that resolved to an allowed address when added and to loopback at send time is not sent to', async () => {
    dns.records.set('hooks.parley.test', '127.0.0.2');
    const url = `http://hooks.parley.test:${outside.port}/hook`;
    const added = await server.cli('webhooks', 'add', '--key', keyId, '--url', url, '--events', 'call.started');
    assert.equal(added.code, 0, added.stderr);
    const first = await session();
    await until('the first call.started delivered', () => deliveriesOf(first, url), (ds) => ds[0]?.status === 'delivered');
    assert.deepEqual(outside.paths, ['/hook']);

    dns.records.set('hooks.parley.test', '127.0.0.1');
    const second = await session();
    const [refused] = await until('the second refused', () => deliveriesOf(second, url), (ds) => ds[0]?.attempts >= 2);
    assert.equal(refused.status, 'pending', 'retried per the backoff: the DNS may change back');
    assert.equal(refused.last_status_code, null);
    assert.equal(refused.last_error, 'refused, not sent: hooks.parley.test: 127.0.0.1 is a loopback address, refused unless WEBHOOK_ALLOWED_CIDRS allows it');
    assert.deepEqual(trap.paths, [], 'nothing reached the loopback service');
    assert.deepEqual(outside.paths, ['/hook']);
    assert.ok(dns.asked.filter((n) => n === 'hooks.parley.test').length >= 4, 'each check asked the DNS server');

    // The DNS changes back: the next attempt is sent.
    dns.records.set('hooks.parley.test', '127.0.0.2');
    await until('the second delivered', () => deliveriesOf(second, url), (ds) => ds[0]?.status === 'delivered');
    assert.deepEqual(outside.paths, ['/hook', '/hook']);
  });

  test('an HTTPS receiver reached by its checked address is verified against its name', async () => {
    dns.records.set('secure.parley.test', '127.0.0.2');
    dns.records.set('other.parley.test', '127.0.0.2');
    const url = `https://secure.parley.test:${secure.port}/hook`;
    const wrongName = `https://other.parley.test:${secure.port}/hook`;
    for (const u of [url, wrongName]) {
      const added = await server.cli('webhooks', 'add', '--key', keyId, '--url', u, '--events', 'call.started');
      assert.equal(added.code, 0, added.stderr);
    }
    const callId = await session();
    await until('delivered over HTTPS', () => deliveriesOf(callId, url), (ds) => ds[0]?.status === 'delivered');
    const [mismatch] = await until('the other name attempted', () => deliveriesOf(callId, wrongName), (ds) => ds[0]?.attempts >= 1 && ds[0]?.last_error);
    assert.equal(mismatch.status, 'pending');
    assert.equal(mismatch.last_error, 'ERR_TLS_CERT_ALTNAME_INVALID', 'the certificate is for secure.parley.test, not other.parley.test');
    assert.deepEqual(secure.paths, ['/hook']);
  });

  test('a receiver answering with a 300 MB body: the status is recorded, the node holds a few KiB of it', async () => {
    const sent = { bytes: 0 };
    global.answer = flood(FLOOD_BYTES, sent);
    const rss = () => metric(server.baseUrl, 'parley_process_resident_memory_bytes');
    const baseline = await rss();
    let peak = baseline;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await rss());
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const callId = await session();
    const globalUrl = `http://127.0.0.2:${global.port}/global`;
    const [delivery] = await until('the flooded delivery recorded', () => deliveriesOf(callId, globalUrl), (ds) => ds[0]?.status === 'delivered', 30_000);
    sampling = false;
    await sampler;
    assert.equal(delivery.last_status_code, 200);
    const grownMiB = (peak - baseline) / MiB;
    assert.ok(grownMiB < 100, `RSS grew ${grownMiB.toFixed(0)} MiB (from ${(baseline / MiB).toFixed(0)} MiB) while the receiver sent ${(sent.bytes / MiB).toFixed(0)} MiB`);
    assert.ok(sent.bytes < FLOOD_BYTES, `the rest of the body was not read (${(sent.bytes / MiB).toFixed(0)} MiB left the receiver)`);
    console.log(`RSS ${(baseline / MiB).toFixed(0)} → peak ${(peak / MiB).toFixed(0)} MiB (+${grownMiB.toFixed(1)}); the receiver got ${(sent.bytes / MiB).toFixed(0)} MiB out before the connection closed`);
  });
});
