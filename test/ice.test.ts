// ice-config's TURN credentials: coturn's REST-API scheme, recomputed here independently.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, test } from 'node:test';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';

const SECRET = 'turn-secret-for-tests-0123456789';
let server: RunningServer;
before(async () => {
  server = await startServer({
    TURN_SECRETS: `${SECRET},older-secret-still-accepted-by-coturn`,
    TURN_URLS: 'turn:turn.example.test:3478?transport=udp,turn:turn.example.test:3478?transport=tcp,turns:turn.example.test:5349?transport=tcp',
    STUN_URLS: 'stun:stun.example.test:3478',
    TURN_CREDENTIAL_TTL_SECONDS: '3600',
    // No TURN server answers at these names: checks off, so every URL is handed out (and no packet leaves loopback).
    TURN_CHECK_INTERVAL_MS: '0',
  });
});
after(async () => {
  await server.stop();
});

test('TURN credential = base64(HMAC-SHA1(first secret, username)), username = expiry:jti.nonce', async () => {
  const token = await mintToken(server.baseUrl, server.devKey);
  const jti = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).jti;
  const r = await http(server.baseUrl, '/v1/realtime/ice-config', { token });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.iceServers[0], { urls: ['stun:stun.example.test:3478'] });
  const turn = r.body.iceServers[1];
  assert.deepEqual(turn.urls, [
    'turn:turn.example.test:3478?transport=udp',
    'turn:turn.example.test:3478?transport=tcp',
    'turns:turn.example.test:5349?transport=tcp',
  ]);
  const m = /^(\d+):([\w-]+)\.([\w-]+)$/.exec(turn.username);
  assert.ok(m, turn.username);
  assert.equal(m[2], jti, 'tied to the token');
  const expiry = Number(m[1]);
  const now = Date.now() / 1000;
  assert.ok(expiry > now + 3590 && expiry < now + 3610, 'lifetime as configured');
  assert.equal(turn.credential, createHmac('sha1', SECRET).update(turn.username).digest('base64'));
});

test('two responses never repeat a credential', async () => {
  const token = await mintToken(server.baseUrl, server.devKey);
  const a = (await http(server.baseUrl, '/v1/realtime/ice-config', { token })).body.iceServers[1];
  const b = (await http(server.baseUrl, '/v1/realtime/ice-config', { token })).body.iceServers[1];
  assert.notEqual(a.username, b.username);
  assert.notEqual(a.credential, b.credential);
});
