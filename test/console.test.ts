// The operator console: off without ADMIN_TOKEN; its login (a wrong token refused, the session
// cookie's attributes, Secure under TLS); every data route refused without the cookie; and the page
// in headless Chromium — log in, watch a real WebRTC call appear live and end, open its conversation
// with its transcript, play its recording, create a key (that works) and revoke it (that then fails). Screenshots are kept in
// test-artifacts/console/.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { loadConfig, ConfigError } from '../src/config/env.ts';
import { buildApp } from '../src/http/app.ts';
import { Metrics } from '../src/observability/metrics.ts';
import type { Services } from '../src/services.ts';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { openCall } from './helpers/rtcClient.ts';
import { makeCertificate } from './helpers/tls.ts';
import { http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ARTIFACTS = join(resolve(import.meta.dirname, '..'), 'test-artifacts', 'console');
const ADMIN_TOKEN = 'console-test-admin-token-0123456789abcdef';
/** A global webhook endpoint nobody listens at: the console lists it, never its secret. */
const WEBHOOK_SECRET = `whsec_${Buffer.from('console-test-webhook-secret-32bytes!').toString('base64')}`;
const PAGE = { 'x-parley-console': '1' };

/** Every data route of the console, and the requests that change something. */
const DATA_ROUTES: { method: string; path: string; body?: unknown }[] = [
  { method: 'GET', path: '/console/api/calls' },
  { method: 'GET', path: '/console/api/conversations' },
  { method: 'GET', path: '/console/api/conversations/conv_missing' },
  { method: 'GET', path: '/console/api/conversations/conv_missing/recording' },
  { method: 'GET', path: '/console/api/keys' },
  { method: 'GET', path: '/console/api/webhooks' },
  { method: 'POST', path: '/console/api/keys', body: { name: 'intruder' } },
  { method: 'POST', path: '/console/api/keys/key_missing/revoke', body: {} },
];

const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The app as `parley serve` builds it, in this process, with what its console's login reads. */
async function appWith(env: Record<string, string>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-console-'));
  dirs.push(dataDir);
  const config = loadConfig({ DATA_DIR: dataDir, HOST: '127.0.0.1', ...env });
  const services = { config, metrics: new Metrics(), nodeId: 'console-test', calls: { isDraining: false, activeCount: 0 }, apiKeys: {} } as unknown as Services;
  return buildApp(services);
}

function login(baseUrl: string, token: string, headers: Record<string, string> = PAGE) {
  return http(baseUrl, '/console/login', { body: { token }, headers });
}

const sessionCookieOf = (res: { headers: Headers }) => /^(parley_console=[^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];

describe('configuration', () => {
  test('without ADMIN_TOKEN there is no console: /console and its routes are 404', async () => {
    const app = await appWith({});
    for (const url of ['/console', '/console/login', '/console/api/calls']) assert.equal((await app.inject(url)).statusCode, 404, url);
    assert.equal((await app.inject({ method: 'POST', url: '/console/login', payload: { token: ADMIN_TOKEN } })).statusCode, 404);
    await app.close();
  });

  test('an ADMIN_TOKEN under 32 characters is refused at start, without being echoed', () => {
    assert.throws(
      () => loadConfig({ ADMIN_TOKEN: 'short-secret-value' }),
      (err: unknown) => err instanceof ConfigError && /ADMIN_TOKEN: must be at least 32 characters/.test(err.message) && !err.message.includes('short-secret-value'),
    );
  });

  test('under TLS the session cookie is Secure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-console-tls-'));
    dirs.push(dir);
    const { cert, key } = makeCertificate(dir);
    const app = await appWith({ ADMIN_TOKEN, TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (app.server.address() as { port: number }).port;
      const setCookie = await new Promise<string>((resolveCookie, reject) => {
        const body = JSON.stringify({ token: ADMIN_TOKEN });
        const req = request(
          { host: '127.0.0.1', port, path: '/console/login', method: 'POST', rejectUnauthorized: false, headers: { ...PAGE, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            assert.equal(res.statusCode, 204);
            resolveCookie(String(res.headers['set-cookie']));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      assert.match(setCookie, /^parley_console=[^;]+; Path=\/console; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
    } finally {
      await app.close();
    }
  });
});

describe('console of a running server', () => {
  let server: RunningServer;
  let browser: LaunchedBrowser;
  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [server, browser] = await Promise.all([startServer({ ADMIN_TOKEN, LOG_LEVEL: 'info', RECORDING: 'on', WEBHOOK_URL: 'http://127.0.0.1:9/hooks', WEBHOOK_SECRET: WEBHOOK_SECRET, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' }), launchBrowser()]);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('every data route refuses a request without the session cookie (or with a forged one)', async () => {
    for (const cookie of [undefined, 'parley_console=4102444800.AAAAAAAAAAAAAAAA.' + 'A'.repeat(43)]) {
      for (const route of DATA_ROUTES) {
        const res = await http(server.baseUrl, route.path, { method: route.method, body: route.body, headers: { ...PAGE, ...(cookie ? { cookie } : {}) } });
        assert.equal(res.status, 401, `${route.method} ${route.path} with ${cookie ? 'a forged' : 'no'} cookie`);
        assert.equal(res.body.error.code, 'console_login_required');
      }
    }
    // The page itself sends a visitor without a session to the login form.
    const page = await fetch(`${server.baseUrl}/console`, { redirect: 'manual' });
    assert.equal(page.status, 302);
    assert.equal(page.headers.get('location'), '/console/login');
    // Not part of the API's description.
    const doc = await http(server.baseUrl, '/openapi.json');
    assert.deepEqual(Object.keys(doc.body.paths).filter((p) => p.startsWith('/console')), []);
  });

  test('login: a wrong token is 401, no cookie; the right one sets an HttpOnly, SameSite=Strict session cookie; changes need the page header', async () => {
    const wrong = await login(server.baseUrl, 'not-the-admin-token-but-just-as-long-0000');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 'console_login_refused');
    assert.equal(wrong.headers.get('set-cookie'), null);
    // Without the page's header (as a cross-site form would post): refused before the token is looked at.
    assert.equal((await login(server.baseUrl, ADMIN_TOKEN, {})).status, 403);

    const right = await login(server.baseUrl, ADMIN_TOKEN);
    assert.equal(right.status, 204);
    assert.match(right.headers.get('set-cookie')!, /^parley_console=[^;]+; Path=\/console; Max-Age=28800; HttpOnly; SameSite=Strict$/, 'plain HTTP: not Secure');
    const cookie = sessionCookieOf(right)!;
    const calls = await http(server.baseUrl, '/console/api/calls', { headers: { cookie } });
    assert.equal(calls.status, 200);
    assert.deepEqual(calls.body.calls, []);
    const webhooks = await http(server.baseUrl, '/console/api/webhooks', { headers: { cookie } });
    assert.equal(webhooks.status, 200);
    assert.deepEqual(webhooks.body.endpoints.map((e: any) => [e.id, e.url, e.api_key_id]), [['global', 'http://127.0.0.1:9/hooks', null]]);
    assert.ok(Array.isArray(webhooks.body.deliveries));
    assert.ok(!JSON.stringify(webhooks.body).includes(WEBHOOK_SECRET.slice(6)), 'no endpoint secret in the console');
    const noHeader = await http(server.baseUrl, '/console/api/keys', { body: { name: 'cross-site' }, headers: { cookie } });
    assert.equal(noHeader.status, 403);
    assert.equal(noHeader.body.error.code, 'console_header_required');
    // Logging out clears the cookie.
    const out = await http(server.baseUrl, '/console/logout', { body: {}, headers: { ...PAGE, cookie } });
    assert.equal(out.status, 204);
    assert.match(out.headers.get('set-cookie')!, /^parley_console=; Path=\/console; Max-Age=0;/);
    assert.ok(!(server.stdout() + server.stderr()).includes(ADMIN_TOKEN), 'the admin token is never logged');
  });

  test('logout ends the session on the server: the old cookie is 401 from then on, another session goes on', async () => {
    const cookie = sessionCookieOf(await login(server.baseUrl, ADMIN_TOKEN))!;
    const other = sessionCookieOf(await login(server.baseUrl, ADMIN_TOKEN))!;
    assert.equal((await http(server.baseUrl, '/console/api/calls', { headers: { cookie } })).status, 200);
    assert.equal((await http(server.baseUrl, '/console/logout', { body: {}, headers: { ...PAGE, cookie } })).status, 204);
    // The cookie as it was before the logout (a copy kept, or a browser that ignored Max-Age=0).
    for (const route of DATA_ROUTES) {
      const res = await http(server.baseUrl, route.path, { method: route.method, body: route.body, headers: { ...PAGE, cookie } });
      assert.equal(res.status, 401, `${route.method} ${route.path} after logout`);
      assert.equal(res.body.error.code, 'console_login_required');
    }
    const page = await fetch(`${server.baseUrl}/console`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(page.status, 302, 'the page sends the logged-out browser to the login');
    assert.equal((await http(server.baseUrl, '/console/api/calls', { headers: { cookie: other } })).status, 200, 'another session is not logged out');
  });

  test('conversations come a page at a time, newest first, with an opaque position for the next page', async () => {
    const cookie = sessionCookieOf(await login(server.baseUrl, ADMIN_TOKEN))!;
    // Three short calls under two keys.
    const other = /key:\s+(sk_parley_ai_\w+)/.exec((await server.cli('keys', 'create', '--name', 'second')).stdout)![1]!;
    const ids: string[] = [];
    for (const key of [server.devKey, other, server.devKey]) {
      const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, key));
      ids.push(client.conversationId);
      client.close();
    }
    const first = await http(server.baseUrl, '/console/api/conversations?limit=2', { headers: { cookie } });
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.data.map((c: any) => c.id), [ids[2], ids[1]]);
    assert.notEqual(first.body.next, null);
    const second = await http(server.baseUrl, `/console/api/conversations?limit=2&after=${first.body.next}`, { headers: { cookie } });
    assert.equal(second.body.data[0].id, ids[0]);
    assert.equal((await http(server.baseUrl, '/console/api/conversations?after=bm90IG91cnM', { headers: { cookie } })).status, 400);
  });

  test('in Chromium: log in, watch a call appear and end, read its transcript, create and revoke a key', async () => {
    const page = await browser.openPage(server.baseUrl);
    page.on('dialog', (dialog) => void dialog.accept());
    const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

    await page.goto(`${server.baseUrl}/console`);
    assert.equal(new URL(page.url()).pathname, '/console/login', 'sent to the login form');
    await page.fill('#token', 'not-the-admin-token-but-just-as-long-0000');
    await page.click('button[type=submit]');
    await page.waitForSelector('#login-error:not([hidden])');
    assert.match(await page.textContent('#login-error') ?? '', /not the admin token/);
    await shot('1-login-refused');
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.baseUrl}/console`);
    const cookies = await page.context().cookies();
    assert.deepEqual(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path]), [['parley_console', true, 'Strict', '/console']]);
    assert.equal(await page.evaluate('document.cookie'), '', 'the page cannot read its session');

    // A call from a libwebrtc peer appears live, with its front door and (once connected) its quality.
    const client = await openCall(server.baseUrl, await mintToken(server.baseUrl, server.devKey));
    const row = `tr[data-call="${client.conversationId}"]`;
    try {
      await client.waitConnected();
      await client.nextEvent('session.created');
      await page.waitForSelector(`${row}.live`, { timeout: 10_000 });
      await until('the live row to show the call active and connected', () => rowText(page, row), (t) => /\bactive\b/.test(t) && /connected in \d/.test(t));
      assert.match(await rowText(page, row), /webrtc/);
      assert.match(await rowText(page, row), /parley-offline/, 'the model the call runs');
      client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'My name is Alice.' }] } });
      assert.match((await client.nextEvent('response.output_item.done')).text, /Alice/);
      await shot('2-live-call');
      client.send({ type: 'session.end' });
      await client.nextEvent('session.ended');
    } finally {
      client.close();
    }
    // It ends: the row stays, marked ended with its reason and its recorded quality.
    await page.waitForSelector(`${row}.ended`, { timeout: 15_000 });
    await until('the ended row to say how the call ended', () => rowText(page, row), (t) => /\bended \(\w+\)/.test(t) && /connected in \d/.test(t));
    await shot('3-call-ended');

    // Its conversation: record and transcript. (Its recording is finished just after the call ends.)
    await until(
      'the recording finished',
      () => page.evaluate(`fetch('/console/api/conversations/${client.conversationId}').then((r) => r.json()).then((c) => c.recording)`),
      (state) => state === 'complete',
    );
    await page.click(`${row} a`);
    await page.waitForSelector('#conversation:not([hidden])');
    await until('the transcript', () => page.innerText('#transcript'), (t) => t.includes('My name is Alice.') && /assistant.*Alice/.test(t));
    assert.equal(await page.textContent('#conversation-id'), client.conversationId);
    assert.match(await page.innerText('#conversation-fields'), /ended \(\w+\)/);
    // Its recording plays in the page (Chromium fetches it with the session cookie, in byte ranges).
    await page.waitForSelector('#conversation-recording:not([hidden])');
    const playing = await page.evaluate(
      `(async () => { const a = document.getElementById('recording-player'); a.muted = true; await a.play(); await new Promise((r) => a.addEventListener('timeupdate', r, { once: true })); return { paused: a.paused, duration: a.duration, time: a.currentTime }; })()`,
    ) as { paused: boolean; duration: number; time: number };
    assert.equal(playing.paused, false, JSON.stringify(playing));
    assert.ok(playing.duration > 1, JSON.stringify(playing));
    await shot('4-conversation');

    // A key created in the console works, and stops working once revoked there.
    await page.click('nav button[data-tab=keys]');
    // The development key's row sums its calls of the last 30 days: the one above, at least.
    await until('the dev key\'s usage', () => page.textContent('#keys-rows tr:first-child .usage').then((t) => t ?? ''), (t) => /[1-9]\d* calls · \d+ in \/ \d+ out tokens/.test(t));
    await page.fill('#key-name', 'made in the console');
    await page.click('#key-create button[type=submit]');
    await page.waitForSelector('#key-created:not([hidden])');
    const key = (await page.textContent('#key-created-value'))!;
    assert.match(key, /^sk_parley_ai_\w+$/);
    await mintToken(server.baseUrl, key);
    const keyRow = 'tr[data-key-name="made in the console"]';
    await page.waitForSelector(keyRow);
    await shot('5-key-created');
    await page.click(`${keyRow} button.revoke`);
    await until('the key to show revoked', () => page.textContent(`${keyRow} .status`).then((t) => t ?? ''), (t) => t.startsWith('revoked'));
    const refused = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: key });
    assert.equal(refused.status, 401);
    await shot('6-key-revoked');
    assert.ok(!(server.stdout() + server.stderr()).includes(key), 'the created key is never logged');
  });
});

const rowText = (page: Page, selector: string) => page.innerText(selector);
