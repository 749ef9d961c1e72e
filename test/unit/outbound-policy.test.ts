// The outbound policy for requests to users' URLs (webhooks): which addresses are internal (IPv4,
// IPv6, IPv4-mapped IPv6), what an allow list lets through, Parley's own listeners; the resolver
// pointed at a DNS server of the test's; the request that connects only to a checked address and
// reads a few KiB of any answer. Everything on loopback.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../src/config/env.ts';
import { hostResolver } from '../../src/system/hostResolver.ts';
import { OutboundPolicy, internalKind } from '../../src/system/outboundPolicy.ts';
import { OutboundRefused, outboundRequest, type OutboundGuard } from '../../src/system/outboundRequest.ts';
import { DnsServer } from '../helpers/dnsServer.ts';
import { configProblems } from '../helpers/config.ts';

test('internal addresses by kind, IPv4 and IPv6; public ones are none', () => {
  const cases: [string, string | undefined][] = [
    ['127.0.0.1', 'a loopback address'],
    ['127.255.0.9', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['10.1.2.3', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['fc00::1', 'a private address'],
    ['fd12:3456::1', 'a private address'],
    ['169.254.1.1', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['169.254.169.254', 'a cloud metadata address'],
    ['fd00:ec2::254', 'a cloud metadata address'],
    ['0.0.0.0', 'an unspecified address'],
    ['::', 'an unspecified address'],
    ['100.64.0.1', 'a shared (CGNAT) address'],
    ['100.127.255.254', 'a shared (CGNAT) address'],
    ['224.0.0.1', 'a multicast address'],
    ['ff02::1', 'a multicast address'],
    ['255.255.255.255', 'a reserved address'],
    ['8.8.8.8', undefined],
    ['172.32.0.1', undefined],
    ['100.128.0.1', undefined],
    ['2001:4860:4860::8888', undefined],
  ];
  for (const [address, kind] of cases) assert.equal(internalKind(address), kind, address);
});

test('an IPv4-mapped IPv6 address is judged as its IPv4 address, in either spelling', () => {
  assert.equal(internalKind('::ffff:127.0.0.1'), 'a loopback address');
  assert.equal(internalKind('::ffff:7f00:1'), 'a loopback address');
  assert.equal(internalKind('::ffff:a9fe:a9fe'), 'a cloud metadata address');
  assert.equal(internalKind('::ffff:808:808'), undefined);
  const policy = new OutboundPolicy([], 'ALLOW');
  assert.equal(policy.refusal('::ffff:7f00:1', 80, []), '127.0.0.1 is a loopback address, refused unless ALLOW allows it');
});

test('the allow list lets named ranges through, and nothing else', () => {
  const policy = new OutboundPolicy(['127.0.0.0/8', '10.1.0.0/16', 'fd00::/8'], 'ALLOW');
  assert.equal(policy.refusal('127.0.0.5', 80, []), undefined);
  assert.equal(policy.refusal('::ffff:127.0.0.5', 80, []), undefined);
  assert.equal(policy.refusal('10.1.2.3', 80, []), undefined);
  assert.equal(policy.refusal('fd00::1', 80, []), undefined);
  assert.equal(policy.refusal('10.2.0.1', 80, []), '10.2.0.1 is a private address, refused unless ALLOW allows it');
  assert.equal(policy.refusal('::1', 80, []), '::1 is a loopback address, refused unless ALLOW allows it');
  assert.equal(policy.refusal('169.254.169.254', 80, []), '169.254.169.254 is a cloud metadata address, refused unless ALLOW allows it');
  assert.equal(policy.refusal('93.184.216.34', 443, []), undefined);
});

test("Parley's own listeners are refused whatever the allow list says", () => {
  const policy = new OutboundPolicy(['127.0.0.0/8', '0.0.0.0/8'], 'ALLOW');
  const own = [
    { host: '127.0.0.1', port: 8080 },
    { host: '0.0.0.0', port: 9000 },
  ];
  assert.equal(policy.refusal('127.0.0.1', 8080, own), "127.0.0.1 port 8080 is one of Parley's own listeners");
  assert.equal(policy.refusal('::ffff:127.0.0.1', 8080, own), "127.0.0.1 port 8080 is one of Parley's own listeners");
  assert.equal(policy.refusal('0.0.0.0', 8080, own), "0.0.0.0 port 8080 is one of Parley's own listeners", '0.0.0.0 reaches this machine');
  assert.equal(policy.refusal('127.0.0.2', 8080, own), undefined, 'another address, another socket');
  assert.equal(policy.refusal('127.0.0.1', 8081, own), undefined);
  assert.equal(policy.refusal('127.9.9.9', 9000, own), "127.9.9.9 port 9000 is one of Parley's own listeners", 'a wildcard listener takes every local address');
});

test('the allow and DNS settings are checked at start', () => {
  assert.deepEqual(loadConfig({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8, fd00::/8' }).WEBHOOK_ALLOWED_CIDRS, ['127.0.0.0/8', 'fd00::/8']);
  assert.deepEqual(loadConfig({}).WEBHOOK_ALLOWED_CIDRS, []);
  assert.match(configProblems({ WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/33' }), /WEBHOOK_ALLOWED_CIDRS: "10\.0\.0\.0\/33" has a bad prefix length/);
  assert.deepEqual(loadConfig({ WEBHOOK_DNS_SERVERS: '127.0.0.1:5353,::1,[::1]:53' }).WEBHOOK_DNS_SERVERS, ['127.0.0.1:5353', '::1', '[::1]:53']);
  assert.match(configProblems({ WEBHOOK_DNS_SERVERS: 'dns.example' }), /WEBHOOK_DNS_SERVERS: "dns\.example" is not like/);
  assert.match(configProblems({ WEBHOOK_DNS_SERVERS: '127.0.0.1:99999' }), /WEBHOOK_DNS_SERVERS: "127\.0\.0\.1:99999" is not like/);
});

const dns = new DnsServer();
let receiver: Server;
let served = 0;
/** Bytes the receiver got out before the connection closed. */
let sent = 0;

before(async () => {
  await dns.start();
  // 64 MiB answered to every request, written as the reader takes it.
  receiver = createServer((req, res) => {
    served++;
    const chunk = Buffer.alloc(1024 * 1024, 'y');
    res.writeHead(500, { 'content-length': String(64 * chunk.length) });
    res.on('error', () => {});
    let left = 64;
    const more = () => {
      while (left > 0 && !res.destroyed) {
        left--;
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      if (!res.destroyed) res.end();
    };
    req.resume().on('end', more);
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.2', r));
});
after(async () => {
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
  await dns.stop();
});

const guardFor = (allowed: string[]): OutboundGuard => ({
  policy: new OutboundPolicy(allowed, 'ALLOW'),
  resolve: hostResolver([dns.address]),
  ownListeners: async () => [],
});

test('the resolver asks the DNS servers it is given; an address resolves to itself', async () => {
  dns.records.set('a.parley.test', '127.0.0.7');
  const resolve = hostResolver([dns.address]);
  assert.deepEqual(await resolve('a.parley.test'), ['127.0.0.7']);
  assert.deepEqual(await resolve('::1'), ['::1']);
  await assert.rejects(resolve('b.parley.test'), /^Error: b\.parley\.test does not resolve \(ENOTFOUND\)$/);
});

test('a request reads the status and 4 KiB of a 64 MiB answer, then closes the connection', async () => {
  dns.records.set('hooks.parley.test', '127.0.0.2');
  const port = (receiver.address() as AddressInfo).port;
  sent = 0;
  const res = await outboundRequest(
    new URL(`http://hooks.parley.test:${port}/hook`),
    { method: 'POST', headers: {}, body: '{}', signal: AbortSignal.timeout(5000), keepBytes: 4096 },
    guardFor(['127.0.0.2/32']),
  );
  assert.equal(res.status, 500);
  assert.equal(res.head.length, 4096);
  assert.equal(res.head.toString(), 'y'.repeat(4096));
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(sent < 32 * 1024 * 1024, `the receiver got ${sent} bytes out`);
});

test('a refused address is never connected to, whichever name leads there', async () => {
  dns.records.set('hooks.parley.test', '127.0.0.2');
  const port = (receiver.address() as AddressInfo).port;
  const before = served;
  const ask = (url: string) =>
    outboundRequest(new URL(url), { method: 'POST', headers: {}, body: '{}', signal: AbortSignal.timeout(5000), keepBytes: 16 }, guardFor([]));
  await assert.rejects(ask(`http://hooks.parley.test:${port}/`), (err: Error) => err instanceof OutboundRefused && err.message === 'hooks.parley.test: 127.0.0.2 is a loopback address, refused unless ALLOW allows it');
  await assert.rejects(ask(`http://127.0.0.2:${port}/`), OutboundRefused);
  await assert.rejects(ask(`http://[::ffff:127.0.0.2]:${port}/`), OutboundRefused);
  assert.equal(served, before);
});

test('a host with several addresses: one refused refuses the host; an unreachable one passes to the next', async () => {
  const port = (receiver.address() as AddressInfo).port;
  const ask = (name: string) =>
    outboundRequest(new URL(`http://${name}:${port}/`), { method: 'POST', headers: {}, body: '{}', signal: AbortSignal.timeout(5000), keepBytes: 16 }, guardFor(['127.0.0.2/32', '127.0.0.3/32']));
  dns.records.set('mixed.parley.test', ['127.0.0.2', '127.0.0.1']);
  const before = served;
  await assert.rejects(ask('mixed.parley.test'), /mixed\.parley\.test: 127\.0\.0\.1 is a loopback address/);
  assert.equal(served, before);
  // Nothing listens on 127.0.0.3: refused there, answered on 127.0.0.2.
  dns.records.set('two.parley.test', ['127.0.0.3', '127.0.0.2']);
  assert.equal((await ask('two.parley.test')).status, 500);
  assert.equal(served, before + 1);
});
