// TURN URLs, the coturn Parley runs and what STUN falls back on: pure functions of the settings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/env.ts';
import { managedCoturnConfig, managedTurnServers } from '../../src/ice/coturnConfig.ts';
import { stunUrlsOfTurnServers } from '../../src/ice/stunServer.ts';
import { parseTurnUrl } from '../../src/ice/turnUrl.ts';

const SECRET = 'turn-secret-for-unit-tests-0123';

test('turn: and turns: URLs: host, port (RFC 7065 defaults) and transport', () => {
  assert.deepEqual(parseTurnUrl('turn:turn.example.com'), { host: 'turn.example.com', port: 3478, transport: 'udp' });
  assert.deepEqual(parseTurnUrl('turn:10.0.0.1:3479?transport=tcp'), { host: '10.0.0.1', port: 3479, transport: 'tcp' });
  assert.deepEqual(parseTurnUrl('turns:turn.example.com?transport=tcp'), { host: 'turn.example.com', port: 5349, transport: 'tls' });
  assert.throws(() => parseTurnUrl('stun:turn.example.com:3478'), /not a turn:\/turns: URL/);
});

test('STUN falls back on the turn: servers (one entry per host and port), never turns:', () => {
  assert.deepEqual(stunUrlsOfTurnServers(['turn:a:3479?transport=udp', 'turn:a:3479?transport=tcp', 'turns:a:5349?transport=tcp']), ['stun:a:3479']);
});

test("Parley's coturn on the default loopback HOST: loopback URLs, listens and relays on loopback only", () => {
  const config = loadConfig({ TURN_SECRETS: SECRET });
  assert.deepEqual(managedTurnServers(config, 3479), [
    { url: 'turn:127.0.0.1:3479?transport=udp', target: { host: '127.0.0.1', port: 3479, transport: 'udp' } },
    { url: 'turn:127.0.0.1:3479?transport=tcp', target: { host: '127.0.0.1', port: 3479, transport: 'tcp' } },
  ]);
  const lines = managedCoturnConfig(config, [SECRET], 3479).split('\n');
  for (const line of ['use-auth-secret', `static-auth-secret=${SECRET}`, 'listening-port=3479', 'listening-ip=127.0.0.1', 'relay-ip=127.0.0.1', 'allow-loopback-peers', 'denied-peer-ip=10.0.0.0-10.255.255.255']) {
    assert.ok(lines.includes(line), line);
  }
});

test("Parley's coturn on all interfaces behind 1:1 NAT: the public address in URLs and external-ip, checks on loopback, loopback peers denied", () => {
  const config = loadConfig({ TURN_SECRETS: SECRET, HOST: '0.0.0.0', ICE_PUBLIC_IP: '203.0.113.7' });
  assert.deepEqual(
    managedTurnServers(config, 3479).map((s) => [s.url, s.target.host]),
    [
      ['turn:203.0.113.7:3479?transport=udp', '127.0.0.1'],
      ['turn:203.0.113.7:3479?transport=tcp', '127.0.0.1'],
    ],
  );
  const lines = managedCoturnConfig(config, [SECRET], 3479).split('\n');
  assert.ok(lines.includes('external-ip=203.0.113.7'));
  assert.ok(lines.includes('denied-peer-ip=127.0.0.0-127.255.255.255'));
  assert.ok(!lines.some((l) => l.startsWith('listening-ip=') || l.startsWith('relay-ip=') || l === 'allow-loopback-peers'));
});

test('the generated coturn config bounds what a credential may hold and denies every written form of private addresses', () => {
  const lines = managedCoturnConfig(loadConfig({ TURN_SECRETS: SECRET, HOST: '0.0.0.0' }), [SECRET], 3479).split('\n');
  for (const line of ['user-quota=10', 'total-quota=2000', 'max-bps=500000', 'no-tcp-relay']) assert.ok(lines.includes(line), line);
  const denied = lines.filter((l) => l.startsWith('denied-peer-ip=')).map((l) => l.slice('denied-peer-ip='.length));
  for (const range of ['::2-::ffff:ffff', '::ffff:0.0.0.0-::ffff:255.255.255.255', '::ffff:0:0.0.0.0-::ffff:0:255.255.255.255', '2001:db8::-2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'fec0::-feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '::1']) {
    assert.ok(denied.includes(range), range);
  }
  // coturn reads a bare `::` entry as every address.
  assert.ok(!denied.includes('::'));
  const relaying = managedCoturnConfig(loadConfig({ TURN_SECRETS: SECRET, TURN_TCP_RELAY: 'true', TURN_USER_QUOTA: '3' }), [SECRET], 3479).split('\n');
  assert.ok(!relaying.includes('no-tcp-relay') && relaying.includes('user-quota=3'));
});
