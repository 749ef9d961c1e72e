// The demo page in a real browser (headless Debian Chromium, fake microphone): a call through the
// real endpoints, echoed audio, a live session.update, hang-up recorded; and the demo's
// backend-proxy route: rate limit, no credentials leaked (where it is off: test/first-start.test.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { launchBrowser, type LaunchedBrowser } from './helpers/browser.ts';
import { PARLEY, http, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const ARTIFACTS = join(ROOT, 'test-artifacts');
const run = promisify(execFile);


/** Creates an API key in `dataDir`'s store with the CLI (before the server starts) and returns it. */
async function createKey(dataDir: string): Promise<string> {
  const { stdout } = await run(process.execPath, [...PARLEY, 'keys', 'create', '--name', 'demo-test'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
  });
  const key = /key:\s+(sk_parley_ai_\w+)/.exec(stdout)?.[1];
  assert.ok(key, `keys create printed a key: ${stdout}`);
  return key;
}

type DemoWindow = { parleyDemo: { state: string; conversationId: string | null; events: any[]; inboundAudio(): Promise<any>; outboundAudio(): Promise<any>; outboundVideo(): Promise<any> } };
const demo = <T>(page: Page, fn: (d: DemoWindow['parleyDemo']) => T | Promise<T>): Promise<T> =>
  page.evaluate(`(${fn.toString()})(window.parleyDemo)`) as Promise<T>;

describe('demo page in headless Chromium', () => {
  let server: RunningServer;
  let browser: LaunchedBrowser;
  let dataDir: string;
  let apiKey: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'parley-demo-'));
    apiKey = await createKey(dataDir);
    server = await startServer({ DATA_DIR: dataDir, DEMO_API_KEY: apiKey });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('Talk: connected, session events, echoed audio, session.update applied, hang-up recorded', async () => {
    const context = await browser.browser.newContext({ viewport: { width: 1120, height: 860 } });
    const page = await context.newPage();
    const urls: string[] = [];
    const bodies: Promise<string>[] = [];
    const pageErrors: string[] = [];
    page.on('request', (req) => urls.push(req.url()));
    page.on('response', (res) => bodies.push(res.text().catch(() => '')));
    page.on('pageerror', (err) => pageErrors.push(err.message));
    try {
      await page.goto(`${server.baseUrl}/`);
      await page.waitForFunction(() => !(document.getElementById('model') as HTMLSelectElement).disabled, null, { timeout: 15_000 });
      const models = await page.$$eval('#model option', (os) => os.map((o) => (o as HTMLOptionElement).value));
      assert.ok(models.includes('audio-echo') && models.includes('orga-1-beta'), `models from GET /v1/realtime/models: ${models}`);
      assert.equal(await page.$eval('#voice', (s) => (s as HTMLSelectElement).value), 'Victoria', 'the default voice is preselected');

      await page.selectOption('#model', 'audio-echo');
      await page.click('#talk');
      await page.waitForFunction(() => (window as any).parleyDemo.state === 'connected', null, { timeout: 30_000 });
      assert.equal(await page.textContent('#status-text'), 'connected');
      const conversationId = await demo(page, (d) => d.conversationId);
      assert.match(conversationId ?? '', /^conv_/);

      // The session's opening events, as the page saw them and shows them.
      await page.waitForFunction(() => (window as any).parleyDemo.events.some((e: any) => e.type === 'conversation.created'), null, { timeout: 10_000 });
      const events = await demo(page, (d) => d.events);
      const created = events.find((e) => e.type === 'session.created');
      assert.equal(created.session.id, conversationId);
      assert.equal(created.session.model, 'audio-echo');
      assert.equal(created.session.voice, 'Victoria');
      assert.equal(events.find((e) => e.type === 'conversation.created').conversation.id, conversationId);
      assert.equal(await page.locator('#events li[data-type="session.created"]').count(), 1);
      assert.equal(await page.locator('#events li[data-type="conversation.created"]').count(), 1);
      assert.equal(await page.textContent('#conversation-id'), conversationId);

      // The fake microphone goes out; the echo agent's audio comes back, and it is not silence.
      const sent = await until('microphone packets sent', () => demo(page, (d) => d.outboundAudio()), (s) => s.packetsSent > 50);
      assert.ok(sent.packetsSent > 50);
      const first = await until('echoed audio received', () => demo(page, (d) => d.inboundAudio()), (s) => s.packetsReceived > 100 && s.totalAudioEnergy > 0);
      const later = await until(
        'more echoed audio energy',
        () => demo(page, (d) => d.inboundAudio()),
        (s) => s.packetsReceived > first.packetsReceived + 50 && s.totalAudioEnergy > first.totalAudioEnergy,
      );
      assert.ok(later.totalAudioEnergy > first.totalAudioEnergy, 'the received audio carries energy (not silence)');
      const loudest = await until('a non-silent audio level', () => demo(page, (d) => d.inboundAudio()), (s) => s.audioLevel > 0.001);
      assert.ok(loudest.audioLevel > 0.001);

      // Changing the voice during the call sends session.update; the server applies it.
      await page.selectOption('#voice', 'Juan');
      await page.waitForFunction(
        () => (window as any).parleyDemo.events.some((e: any) => e.type === 'session.updated' && e.session.voice === 'Juan'),
        null,
        { timeout: 10_000 },
      );
      assert.equal(await page.locator('#events li.out[data-type="session.update"]').count(), 1);
      assert.match((await page.textContent('#session-summary')) ?? '', /audio-echo · Juan/);
      const live = await http(server.baseUrl, `/v1/realtime/conversations/${conversationId}`, { token: apiKey });
      assert.equal(live.body.state, 'active');
      assert.equal(live.body.params.voice, 'Juan', 'the server holds the updated session');

      await until('audio statistics on the page', () => page.textContent('#audio-stats'), (t) => /\d+ packets/.test(t ?? ''));
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'demo-connected.png'), fullPage: true });

      await page.click('#hangup');
      assert.equal(await demo(page, (d) => d.state), 'ended');
      const record = await until(
        'the hang-up to be recorded',
        async () => (await http(server.baseUrl, `/v1/realtime/conversations/${conversationId}`, { token: apiKey })).body,
        (r) => r.state !== 'active',
      );
      assert.equal(record.state, 'ended');
      assert.equal(record.end_reason, 'hangup');

      // Everything the page loaded came from this server, and the API key never reached it.
      const foreign = urls.filter((u) => !u.startsWith(`${server.baseUrl}/`) && !u.startsWith('data:'));
      assert.deepEqual(foreign, [], 'nothing fetched from anywhere else');
      assert.ok(urls.some((u) => u.endsWith('/demo/session')) && urls.some((u) => u.endsWith('/v1/realtime/calls')));
      for (const body of await Promise.all(bodies)) assert.ok(!body.includes(apiKey), 'no response carried the API key');
      assert.ok(!(await page.content()).includes('sk_parley_ai_'));
      assert.deepEqual(pageErrors, []);
    } finally {
      await context.close();
    }
  });

  test('the camera toggle: the call starts with video in its modalities and the camera\'s frames go out', async () => {
    const context = await browser.browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${server.baseUrl}/`);
      await page.waitForFunction(() => !(document.getElementById('model') as HTMLSelectElement).disabled, null, { timeout: 15_000 });
      await page.selectOption('#model', 'audio-echo');
      await page.check('#camera');
      await page.click('#talk');
      await page.waitForFunction(() => (window as any).parleyDemo.state === 'connected', null, { timeout: 30_000 });
      assert.equal(await page.isDisabled('#camera'), true, 'the camera is chosen before the call');
      const events = await demo(page, (d) => d.events);
      assert.deepEqual(events.find((e) => e.type === 'session.created').session.modalities, ['audio', 'video']);
      const video = await until('camera frames sent', () => demo(page, (d) => d.outboundVideo()), (v) => v.framesEncoded > 10);
      assert.ok(video.framesEncoded > 10);
      await page.click('#hangup');
    } finally {
      await context.close();
    }
  });
});

describe('demo backend-proxy route', () => {
  test('rate-limited per client (429, Shape A, Retry-After); tokens work, never logged, no CORS; key revoked at shutdown', async () => {
    const server = await startServer({ DEMO_ENABLED: 'true', LOG_LEVEL: 'trace' });
    try {
      const pageRes = await fetch(`${server.baseUrl}/`);
      assert.equal(pageRes.status, 200);
      assert.match(pageRes.headers.get('content-type') ?? '', /text\/html/);
      assert.match(pageRes.headers.get('content-security-policy') ?? '', /connect-src 'self'/);

      const tokens: string[] = [];
      for (let i = 0; i < 10; i++) {
        // One of them from another origin: answered, but without CORS headers a foreign page cannot read it.
        const r = await http(server.baseUrl, '/demo/session', { body: {}, headers: i === 0 ? { origin: 'https://elsewhere.example' } : {} });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(Object.keys(r.body).sort(), ['ephemeralToken', 'iceServers']);
        assert.ok(Array.isArray(r.body.iceServers) && r.body.iceServers.length > 0);
        assert.equal(r.headers.get('access-control-allow-origin'), null);
        assert.equal(r.headers.get('cache-control'), 'no-store');
        tokens.push(r.body.ephemeralToken);
      }
      assert.equal(new Set(tokens).size, 10, 'a fresh token each time');
      const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token: tokens[9] });
      assert.equal(ice.status, 200, 'the demo token is a working ephemeral token');

      // Ten a minute, counted from the first: the next is refused (a few tries, should the minute end meanwhile).
      let limited = await http(server.baseUrl, '/demo/session', { body: {} });
      for (let extra = 1; limited.status === 200 && extra < 5; extra++) limited = await http(server.baseUrl, '/demo/session', { body: {} });
      assert.equal(limited.status, 429);
      assert.deepEqual(Object.keys(limited.body), ['error']);
      assert.equal(typeof limited.body.error.message, 'string');
      assert.equal(limited.body.error.type, 'invalid_request_error');
      assert.equal(limited.body.error.param, null);
      assert.equal(limited.body.error.code, 'rate_limit_exceeded');
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
      // The page itself is not rate-limited.
      assert.equal((await fetch(`${server.baseUrl}/demo/demo.js`)).status, 200);

      await server.stop('SIGTERM', { keepData: true });
      const logs = server.stdout() + server.stderr();
      for (const t of tokens) assert.ok(!logs.includes(t), 'no raw token in the logs');
      const keys = JSON.parse((await server.cli('keys', 'list', '--json')).stdout) as { name: string; revoked_at: string | null }[];
      const demoKeys = keys.filter((k) => k.name.startsWith('demo page'));
      assert.equal(demoKeys.length, 1, 'one in-memory demo key was created');
      assert.ok(demoKeys[0]!.revoked_at, 'and revoked at shutdown');
    } finally {
      await server.stop();
      rmSync(server.env.DATA_DIR!, { recursive: true, force: true });
    }
  });

  test('a DEMO_API_KEY that is not an API key stops the start, without echoing it', async () => {
    const secret = 'not-a-parley-key-but-secret-0123456789';
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-demo-'));
    try {
      // If the setting were (wrongly) accepted, the service would run: the timeout ends it.
      const started = run(process.execPath, [...PARLEY, 'serve'], {
        cwd: ROOT,
        timeout: 20_000,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0', DATA_DIR: dataDir, DEMO_API_KEY: secret },
      });
      await assert.rejects(started, (err: { code: number; stdout: string; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, /DEMO_API_KEY: must be a Parley API key/);
        assert.ok(!(err.stdout + err.stderr).includes(secret));
        return true;
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

});
