// The seed's error table and decisions.md's wire contract, through HTTP against a real server; and
// the docs' curl commands for the same routes, run as the docs write them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { shellBlock } from './helpers/markdown.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';

const run = promisify(execFile);

const MINIMAL_OFFER_SDP = 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n';

let server: RunningServer;
let token: string;
before(async () => {
  server = await startServer();
  token = await mintToken(server.baseUrl, server.devKey);
});
after(async () => {
  await server.stop();
});

function assertShapeA(body: any, messagePattern: RegExp) {
  assert.equal(typeof body.error, 'object');
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.param, null);
  assert.equal(body.error.code, null);
  assert.match(body.error.message, messagePattern);
}

function assertNestedKeyError(body: any) {
  assert.equal(body.error.type, 'invalid_request_error');
  assert.equal(body.error.param, null);
  assert.equal(body.error.code, null);
  assert.equal(typeof body.error.message, 'object');
  assert.match(body.error.message.message, /API key/i);
  assert.match(body.error.message.message, /incorrect|inactive/i);
  assert.equal(body.error.message.type, 'invalid_request_error');
  assert.equal(body.error.message.param, null);
  assert.equal(body.error.message.code, null);
}

describe('client-secrets', () => {
  test('a valid key gets a token in both the reference and the guide form', async () => {
    const before = Date.now();
    const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.token_type, 'bearer');
    assert.match(r.body.ephemeral_token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.equal(r.body.ephemeralToken, r.body.ephemeral_token);
    assert.equal(r.body.ttl, 120);
    assert.match(r.body.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    const exp = Date.parse(r.body.expires_at);
    assert.ok(exp >= before + 118_000 && exp <= Date.now() + 121_000, 'expires_at is about 120 s ahead');
    const header = JSON.parse(Buffer.from(r.body.ephemeral_token.split('.')[0], 'base64url').toString());
    assert.equal(header.alg, 'HS256');
    assert.ok(header.kid, 'token header carries a kid');
    const claims = JSON.parse(Buffer.from(r.body.ephemeral_token.split('.')[1], 'base64url').toString());
    for (const c of ['iss', 'aud', 'sub', 'iat', 'nbf', 'exp', 'jti']) assert.ok(claims[c] !== undefined, `claim ${c}`);
    assert.ok(!JSON.stringify(claims).includes(server.devKey), 'the key is not inside the token');
    assert.match(claims.sub, /^key_/);
  });

  test('accepts an empty body, {} and no Content-Type', async () => {
    for (const opts of [{ rawBody: '{}', headers: { 'content-type': 'application/json' } }, { rawBody: '' }, {}]) {
      const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey, ...opts });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
  });

  test('any field in the body is 422 extra_forbidden', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { token: server.devKey, body: { model: 'x', ttl: 5 } });
    assert.equal(r.status, 422);
    const types = r.body.detail.map((d: any) => d.type);
    assert.deepEqual(types, ['extra_forbidden', 'extra_forbidden']);
    assert.deepEqual(r.body.detail.map((d: any) => d.loc), [['body', 'model'], ['body', 'ttl']]);
    assert.equal(r.body.detail[0].msg, 'Extra inputs are not permitted');
  });

  test('?email= is optional, recorded on the token and validated', async () => {
    const ok = await http(server.baseUrl, '/v1/realtime/client-secrets?email=user%40example.com', { method: 'POST', token: server.devKey });
    assert.equal(ok.status, 200);
    const claims = JSON.parse(Buffer.from(ok.body.ephemeral_token.split('.')[1], 'base64url').toString());
    assert.equal(claims.end_user, 'user@example.com');
    const bad = await http(server.baseUrl, '/v1/realtime/client-secrets?email=not-an-address', { method: 'POST', token: server.devKey });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['query', 'email']);
  });

  test('missing, malformed, unknown key and a JWT instead of a key: nested 401', async () => {
    const cases: Record<string, string>[] = [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer sk_parley_ai_' + 'A'.repeat(40) },
      { authorization: 'Bearer sk_other_ai_123' },
      { authorization: `Bearer ${token}` },
    ];
    for (const headers of cases) {
      const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assertNestedKeyError(r.body);
      assert.ok(!JSON.stringify(r.body).includes('AAAAAAAAAA'), 'the presented key is not echoed');
    }
  });

  test('Bearer scheme is case-insensitive and tolerates surrounding whitespace', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', headers: { authorization: `  bEaReR   ${server.devKey}  ` } });
    assert.equal(r.status, 200);
  });

  test('no CORS headers, even for a browser origin', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: server.devKey, headers: { origin: 'https://app.example' } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    const pre = await http(server.baseUrl, '/v1/realtime/client-secrets', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(pre.headers.get('access-control-allow-origin'), null);
    assert.equal(pre.status, 405);
  });
});

describe('ice-config', () => {
  test('returns STUN and TURN entries with urls arrays', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/ice-config', { token });
    assert.equal(r.status, 200);
    const servers = r.body.iceServers as any[];
    const stun = servers.find((s) => s.urls.some((u: string) => u.startsWith('stun:')));
    const turn = servers.find((s) => s.urls.some((u: string) => u.startsWith('turn')));
    assert.ok(stun && turn);
    for (const s of servers) assert.ok(Array.isArray(s.urls) && s.urls.every((u: unknown) => typeof u === 'string'));
    assert.equal(stun.username, undefined);
    assert.equal(stun.credential, undefined);
    assert.equal(typeof turn.username, 'string');
    assert.equal(typeof turn.credential, 'string');
  });

  test('works without Content-Type (as the server SDK calls it)', async () => {
    const r = await fetch(server.baseUrl + '/v1/realtime/ice-config', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
  });

  test('no Authorization header, or not Bearer: 403 Not authenticated', async () => {
    for (const headers of <Record<string, string>[]>[{}, { authorization: 'Basic abc' }, { authorization: 'Bearer' }, { authorization: '' }]) {
      const r = await http(server.baseUrl, '/v1/realtime/ice-config', { headers });
      assert.equal(r.status, 403, JSON.stringify(headers));
      assertShapeA(r.body, /^Not authenticated$/);
    }
  });

  test('invalid token: 401 naming the ephemeral token', async () => {
    for (const bad of ['garbage', 'a.b.c', server.devKey]) {
      const r = await http(server.baseUrl, '/v1/realtime/ice-config', { token: bad });
      assert.equal(r.status, 401);
      assertShapeA(r.body, /ephemeral token is invalid/i);
    }
  });

  test('answers browser preflights and sets CORS headers', async () => {
    const pre = await http(server.baseUrl, '/v1/realtime/ice-config', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,content-type' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    assert.match(pre.headers.get('access-control-allow-headers') ?? '', /Authorization/i);
    assert.match(pre.headers.get('access-control-allow-headers') ?? '', /Content-Type/i);
    const r = await http(server.baseUrl, '/v1/realtime/ice-config', { token, headers: { origin: 'https://app.example' } });
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
  });
});

describe('calls validation', () => {
  test('missing offer and params: 422 listing both', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: {} });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [
      { type: 'missing', loc: ['body', 'offer'], msg: 'Field required', input: null },
      { type: 'missing', loc: ['body', 'params'], msg: 'Field required', input: null },
    ]);
  });

  test('empty body is the same as {}', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', { method: 'POST', token, headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail.map((d: any) => d.loc), [['body', 'offer'], ['body', 'params']]);
  });

  test('params missing alone', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp: MINIMAL_OFFER_SDP, type: 'offer', candidates: [] } } });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['body', 'params'], msg: 'Field required', input: null }]);
  });

  test('wrong types are all listed, in pydantic wording', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', {
      token,
      body: {
        offer: { sdp: 5, type: 'answer', candidates: 'x' },
        params: { temperature: 'hot', return_transcription: 'maybe', history: 3, modalities: 'audio', instructions: 7, voice: 'Nobody', model: 'gpt-x' },
      },
    });
    assert.equal(r.status, 422);
    const byLoc = Object.fromEntries(r.body.detail.map((d: any) => [d.loc.join('.'), d]));
    assert.equal(byLoc['body.offer.sdp'].type, 'string_type');
    assert.equal(byLoc['body.offer.sdp'].msg, 'Input should be a valid string');
    assert.equal(byLoc['body.offer.type'].type, 'literal_error');
    assert.equal(byLoc['body.offer.type'].msg, "Input should be 'offer'");
    assert.equal(byLoc['body.offer.candidates'].type, 'list_type');
    assert.equal(byLoc['body.params.temperature'].type, 'float_parsing');
    assert.equal(byLoc['body.params.return_transcription'].type, 'bool_parsing');
    assert.equal(byLoc['body.params.history'].type, 'bool_type');
    assert.equal(byLoc['body.params.modalities'].type, 'list_type');
    assert.equal(byLoc['body.params.instructions'].type, 'string_type');
    assert.equal(byLoc['body.params.voice'].type, 'literal_error');
    assert.match(byLoc['body.params.voice'].msg, /'Sofía'/);
    assert.match(byLoc['body.params.voice'].msg, /'alloy'/);
    assert.match(byLoc['body.params.model'].msg, /'orga-1-beta'/);
    assert.equal(r.body.detail.length, 10);
  });

  test('offer and params of the wrong kind', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: 'sdp', params: [] } });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail.map((d: any) => [d.type, d.loc.join('.')]), [
      ['model_attributes_type', 'body.offer'],
      ['model_attributes_type', 'body.params'],
    ]);
  });

  test('temperature bounds and candidate / instructions limits', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', {
      token,
      body: {
        offer: { sdp: MINIMAL_OFFER_SDP, type: 'offer', candidates: Array.from({ length: 65 }, () => ({ candidate: 'candidate:1 1 udp 1 127.0.0.1 9 typ host' })) },
        params: { temperature: 2.5, instructions: 'x'.repeat(32 * 1024 + 1) },
      },
    });
    assert.equal(r.status, 422);
    const types = r.body.detail.map((d: any) => d.type).sort();
    assert.deepEqual(types, ['less_than_equal', 'string_too_long', 'too_long']);
  });

  test('malformed JSON: json_invalid with the offset', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', { method: 'POST', token, rawBody: '{"offer": ', headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 422);
    assert.equal(r.body.detail[0].type, 'json_invalid');
    assert.equal(r.body.detail[0].msg, 'JSON decode error');
    assert.equal(r.body.detail[0].loc[0], 'body');
    assert.equal(typeof r.body.detail[0].loc[1], 'number');
  });

  test('an SDP that is not a usable offer: 422 naming the problem', async () => {
    const cases: [string, RegExp][] = [
      ['hello', /cannot be parsed|v=0|no m-lines/],
      [MINIMAL_OFFER_SDP, /no m-lines/],
      [MINIMAL_OFFER_SDP + 'm=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\na=rtpmap:0 PCMU/8000\r\n', /Opus/],
      [MINIMAL_OFFER_SDP + 'm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=rtpmap:111 opus/48000/2\r\n', /ICE credentials/],
      [
        MINIMAL_OFFER_SDP + 'm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=rtpmap:111 opus/48000/2\r\n',
        /fingerprint/,
      ],
      [MINIMAL_OFFER_SDP + 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=rtpmap:96 VP8/90000\r\n', /no audio m-line/],
    ];
    for (const [sdp, pattern] of cases) {
      const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp, type: 'offer', candidates: [] }, params: {} } });
      assert.equal(r.status, 422, sdp);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'offer', 'sdp']);
      assert.match(r.body.detail.map((d: any) => d.msg).join(' | '), pattern);
    }
  });

  test('no token: 403; bad token: 401 (before the body is looked at)', async () => {
    const r1 = await http(server.baseUrl, '/v1/realtime/calls', { body: {} });
    assert.equal(r1.status, 403);
    assertShapeA(r1.body, /^Not authenticated$/);
    const r2 = await http(server.baseUrl, '/v1/realtime/calls', { token: 'x.y.z', body: {} });
    assert.equal(r2.status, 401);
    assertShapeA(r2.body, /ephemeral token is invalid/i);
  });

  test('bodies over 256 KiB: 413 Shape A', async () => {
    const r = await http(server.baseUrl, '/v1/realtime/calls', { token, body: { offer: { sdp: 'x'.repeat(300 * 1024), type: 'offer', candidates: [] }, params: {} } });
    assert.equal(r.status, 413);
    assertShapeA(r.body, /256 KiB/);
  });
});

describe('routing and catalogue', () => {
  test('unknown path 404, wrong method 405, in the framework shapes', async () => {
    const a = await http(server.baseUrl, '/v1/nothing');
    assert.equal(a.status, 404);
    assert.deepEqual(a.body, { detail: 'Not Found' });
    const b = await http(server.baseUrl, '/v1/realtime/calls', { method: 'GET', token });
    assert.equal(b.status, 405);
    assert.deepEqual(b.body, { detail: 'Method Not Allowed' });
    const c = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'DELETE' });
    assert.equal(c.status, 405);
  });

  test('models and voices list what calls accept, with a token or the API key', async () => {
    const models = await http(server.baseUrl, '/v1/realtime/models', { token });
    assert.equal(models.status, 200);
    assert.equal(models.body.default, 'parley-offline');
    assert.deepEqual(models.body.models.find((m: any) => m.id === 'orga-1-beta'), { id: 'orga-1-beta', description: 'Built-in offline conversational model (rule-based, no weights).', kind: 'offline', runs: 'parley-offline', fallback: [] });
    const voices = await http(server.baseUrl, '/v1/realtime/voices', { token: server.devKey });
    assert.equal(voices.status, 200);
    assert.equal(voices.body.default, 'Victoria');
    assert.equal(voices.body.voices.length, 63);
    assert.deepEqual(voices.body.voices.find((v: any) => v.name === 'Giada'), { name: 'Giada', lang: 'it', gender: 'feminine' });
    assert.deepEqual(voices.body.voices.find((v: any) => v.name === 'alloy'), { name: 'alloy', lang: 'en', gender: 'feminine' });
    assert.deepEqual(voices.body.voices.find((v: any) => v.name === 'onyx'), { name: 'onyx', lang: 'en', gender: 'masculine' });
    const none = await http(server.baseUrl, '/v1/realtime/voices');
    assert.equal(none.status, 403);
  });

  test('publishes an OpenAPI document built from the same schemas', async () => {
    const r = await http(server.baseUrl, '/openapi.json');
    assert.equal(r.status, 200);
    assert.ok(r.body.paths['/v1/realtime/calls'].post);
    assert.ok(r.body.paths['/v1/realtime/client-secrets'].post);
    assert.ok(r.body.paths['/v1/realtime/ice-config'].get);
  });

  test('no input crashed the server', async () => {
    const r = await http(server.baseUrl, '/healthz');
    assert.equal(r.status, 200);
    assert.doesNotMatch(server.stderr(), /"level":(50|60)/, 'no error or fatal log lines');
  });
});

describe("the docs' curl commands, run as written (against this server's address)", () => {
  const runDocBlock = async (doc: string, marker: string, env: Record<string, string>) => {
    const script = shellBlock(doc, marker).replaceAll('http://127.0.0.1:8080', server.baseUrl);
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { env: { ...process.env, ...env }, timeout: 20_000 });
    return stdout;
  };

  test("README's quick start: a token with the key, then ice-config with the token", async () => {
    const out = await runDocBlock('README.md', 'jq -r .ephemeral_token', { KEY: server.devKey });
    assert.ok(JSON.parse(out).iceServers.length >= 1, out);
  });

  test("docs/guides/models.md: the models the caller's key may use", async () => {
    const listed = JSON.parse(await runDocBlock('docs/guides/models.md', '/v1/realtime/models', { PARLEY_API_KEY: server.devKey }));
    assert.deepEqual(listed.models.map((m: any) => m.id), ['parley-offline', 'orga-1-beta', 'echo', 'audio-echo']);
  });

  test('docs/reference/http-api.md: client-secrets with the API key, ice-config with its token', async () => {
    const secret = JSON.parse(await runDocBlock('docs/reference/http-api.md', '/v1/realtime/client-secrets', { PARLEY_API_KEY: server.devKey }));
    assert.equal(secret.token_type, 'bearer');
    assert.equal(secret.ephemeralToken, secret.ephemeral_token);
    const ice = JSON.parse(await runDocBlock('docs/reference/http-api.md', '/v1/realtime/ice-config', { TOKEN: secret.ephemeral_token }));
    assert.ok(ice.iceServers.some((s: any) => s.urls.some((u: string) => u.startsWith('stun:'))), JSON.stringify(ice));
  });
});
