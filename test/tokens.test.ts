// Token attacks and key lifecycle, through HTTP and the CLI against real server processes.
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, randomBytes, sign as rsaSign } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
/** A second node on the same store, configured with another audience/issuer. */
let foreign: RunningServer;
let shortLived: string;
let shortLivedIssuedAt: number;

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const parts = (jwt: string) => jwt.split('.') as [string, string, string];
const decode = (seg: string) => JSON.parse(Buffer.from(seg, 'base64url').toString());

/** The secrets both nodes share (each has a DATA_DIR of its own: one server per folder). */
const SECRETS = { API_KEY_PEPPER: randomBytes(32).toString('hex'), TURN_SECRETS: randomBytes(24).toString('hex') };

before(async () => {
  server = await startServer({ TOKEN_TTL_SECONDS: '10', KEY_CACHE_TTL_MS: '200', ...SECRETS });
  foreign = await startServer({ DATABASE_URL: `sqlite:${join(server.env.DATA_DIR!, 'parley.db')}`, ...SECRETS, TOKEN_AUDIENCE: 'someone-else', CREATE_DEV_KEY: 'false' });
  // Minted before the tests (after both starts, which can outlast its life on a busy machine): its
  // expiry (10 s + 5 s skew) is checked at the end of the file.
  shortLived = await mintToken(server.baseUrl, server.devKey);
  shortLivedIssuedAt = Date.now();
});
after(async () => {
  await foreign.stop();
  await server.stop();
});

async function iceStatus(token: string) {
  return (await http(server.baseUrl, '/v1/realtime/ice-config', { token })).status;
}

test('a fresh token works on ice-config and calls', async () => {
  assert.equal(await iceStatus(shortLived), 200);
});

test('tampered payload is rejected', async () => {
  const [h, p, s] = parts(await mintToken(server.baseUrl, server.devKey));
  const claims = decode(p);
  for (const change of [{ exp: claims.exp + 3600 }, { sub: 'key_someoneelse' }, { aud: 'parley-realtime ' }]) {
    assert.equal(await iceStatus(`${h}.${b64({ ...claims, ...change })}.${s}`), 401);
  }
  assert.equal(await iceStatus(`${h}.${p}.${s.slice(0, -2)}AA`), 401, 'altered signature');
});

test('alg:none is rejected', async () => {
  const [h, p] = parts(await mintToken(server.baseUrl, server.devKey));
  const header = { ...decode(h), alg: 'none' };
  assert.equal(await iceStatus(`${b64(header)}.${p}.`), 401);
  assert.equal(await iceStatus(`${b64(header)}.${p}`), 401);
});

test('RS256 and HS256-with-a-public-key confusion are rejected', async () => {
  const [h, p] = parts(await mintToken(server.baseUrl, server.devKey));
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const rsHeader = b64({ ...decode(h), alg: 'RS256' });
  const rsSig = rsaSign('sha256', Buffer.from(`${rsHeader}.${p}`), privateKey).toString('base64url');
  assert.equal(await iceStatus(`${rsHeader}.${p}.${rsSig}`), 401);
  // The classic confusion: HS256 keyed with a public key the attacker knows.
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  const hsSig = createHmac('sha256', pem).update(`${h}.${p}`).digest('base64url');
  assert.equal(await iceStatus(`${h}.${p}.${hsSig}`), 401);
});

test('a token for another audience (same store, same secrets) is rejected', async () => {
  const other = await mintToken(foreign.baseUrl, server.devKey);
  assert.equal(decode(parts(other)[1]).aud, 'someone-else');
  assert.equal(await iceStatus(other), 401);
  const call = await http(server.baseUrl, '/v1/realtime/calls', { token: other, body: {} });
  assert.equal(call.status, 401);
});

test('the API key used as a token, and a token used as an API key', async () => {
  assert.equal(await iceStatus(server.devKey), 401);
  const token = await mintToken(server.baseUrl, server.devKey);
  const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token });
  assert.equal(r.status, 401);
  assert.equal(typeof r.body.error.message, 'object');
});

test('revoking a key (CLI) stops its live tokens and the key itself', async () => {
  const created = await server.cli('keys', 'create', '--name', 'to-revoke');
  assert.equal(created.code, 0, created.stderr);
  const key = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
  const id = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
  const token = await mintToken(server.baseUrl, key);
  assert.equal(await iceStatus(token), 200);
  const revoked = await server.cli('keys', 'revoke', id);
  assert.equal(revoked.code, 0, revoked.stderr);
  const status = await until('the revoked key’s token to be refused', () => iceStatus(token), (s) => s !== 200, 3000);
  assert.equal(status, 401, 'the revoked key’s token is refused (within the cache TTL)');
  const again = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: key });
  assert.equal(again.status, 401);
  assert.match(again.body.error.message.message, /incorrect|inactive/i);
});

test('signing-key rotation keeps live tokens and signs new ones with a new kid', async () => {
  const before = await mintToken(server.baseUrl, server.devKey);
  const rotated = await server.cli('tokens', 'rotate-signing-key');
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.equal(await iceStatus(before), 200, 'a token signed before rotation still verifies');
  const newKid = /signing with (\S+);/.exec(rotated.stdout)![1];
  // The running node learns of the rotation from the store.
  const kid = await until(
    'the node to sign with the new key',
    async () => {
      const k = decode(parts(await mintToken(server.baseUrl, server.devKey))[0]).kid;
      if (k !== newKid) await iceStatus(`${b64({ alg: 'HS256', kid: newKid })}.e30.x`);
      return k;
    },
    (k) => k === newKid,
    // Within a second or two, Redis or not (this server has none).
    3000,
  );
  assert.equal(kid, newKid);
});

test('expired token (signed by the now rotated-out secret) is rejected', async () => {
  // Refused once its 10 s are over (plus the verifier's 5 s of clock tolerance), not before.
  const expiresAt = shortLivedIssuedAt + 10_000 + 5_000;
  const status = await until('the short-lived token to be refused', () => iceStatus(shortLived), (s) => s !== 200, 30_000);
  assert.equal(status, 401);
  assert.ok(Date.now() >= expiresAt - 1_000, `refused ${expiresAt - Date.now()} ms before its expiry`);
  const r = await http(server.baseUrl, '/v1/realtime/calls', { token: shortLived, body: {} });
  assert.equal(r.status, 401);
  assert.match(r.body.error.message, /ephemeral token is invalid/i);
});
