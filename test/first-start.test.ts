// What a new user sees: `npm start` in a checkout (which builds dist/ first) prints no npm warning of
// the project's own making, says as it goes what it is doing and how far it is (npm ci's packages in
// place, the time so far), and a ready line that says what to open; that address serves the demo in
// a browser on a loopback bind, and describes the service on a public one; logs are readable lines
// at a terminal and JSON otherwise (or with LOG_FORMAT=json), with the development key and tokens in
// neither; a port in use (PORT, STUN_PORT, TURN_PORT, INTERNAL_PORT, SIP_PORT, SIP_TLS_PORT) is one
// line naming the setting.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { launchBrowser } from './helpers/browser.ts';
import { makeCertificate } from './helpers/tls.ts';
import { PARLEY, http, startServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const run = promisify(execFile);
/** Words of a promise about time, which the machine decides: the first start says what it does and how far it is instead. */
const ESTIMATES = /a minute or two|a few seconds|usually|: seconds\b|should take/i;

interface Started {
  proc: ChildProcess;
  output: () => string;
  baseUrl: string;
  stop: () => Promise<void>;
}

/** Starts `command` in its own process group with `cwd` and `env`, until it prints the ready line. */
async function startUntilReady(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const proc = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  const baseUrl = await until('the ready line', () => /parley ready at (http:\/\/\S+)/.exec(out)?.[1] ?? (proc.exitCode !== null ? `exited: ${out}` : ''), (v) => v !== '', 90_000);
  assert.match(baseUrl, /^http:/, baseUrl);
  return {
    proc,
    output: () => out,
    baseUrl,
    stop: async () => {
      if (proc.exitCode === null) process.kill(-proc.pid!, 'SIGTERM');
      await exited;
    },
  };
}

function serverEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, STUN_PORT: '0', TURN_PORT: '0', ICE_BIND_ADDRESS: '127.0.0.1', ...extra };
  // The defaults, not whatever the test run's environment says.
  for (const name of ['HOST', 'LOG_FORMAT', 'LOG_LEVEL', 'DEMO_ENABLED']) if (!(name in extra)) delete env[name];
  return env;
}

describe('npm start in a checkout', () => {
  let dir: string;
  before(() => {
    // The checkout's files (what a clone holds) with its installed dependencies.
    dir = mkdtempSync(join(tmpdir(), 'parley-checkout-'));
    for (const entry of ['package.json', 'package-lock.json', '.npmrc', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'scripts', 'src']) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('no npm warning from the project; the build says how long it has taken as it goes; the ready line says to open the address; the demo answers there', async () => {
    // Progress every half second: tsc takes seconds, so some come whatever the machine's speed.
    const server = await startUntilReady('npm', ['start'], dir, serverEnv(join(dir, 'data'), { PROGRESS_EVERY_MS: '500' }));
    try {
      assert.match(server.output(), /parley ready at http:\/\/127\.0\.0\.1:\d+ — open it in a browser and press Talk/);
      const steps = server.output().split('\n').filter((l) => /^(setup|build):/.test(l));
      assert.ok(steps.includes('build: compiling src/ to dist/ with tsc (`npm start` repeats it only when src/ changes)'), steps.join('\n'));
      assert.ok(steps.some((l) => /^build: tsc: \d+ s$/.test(l)), `a line with the time so far while tsc runs:\n${steps.join('\n')}`);
      assert.ok(steps.some((l) => /^build: tsc: done in \d+ s$/.test(l)), steps.join('\n'));
      assert.deepEqual(steps.filter((l) => ESTIMATES.test(l)), [], 'what is done and how far, not how long it should take');
      // The machine's own npm settings (user, global) are not the project's to fix.
      const warnings = server.output().split('\n').filter((l) => /npm warn/i.test(l) && !/Unknown (user|global|env) config/.test(l));
      assert.deepEqual(warnings, []);
      const page = await fetch(`${server.baseUrl}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    } finally {
      await server.stop();
    }
  });

  test('a first npm ci says, as it goes, how many of the lock\'s packages are in place and how long it has taken', async () => {
    // setup.sh's npm ci in a checkout without node_modules, with an npm that places three of the
    // lock's packages a moment apart (the real one would take minutes and the network).
    const fresh = mkdtempSync(join(tmpdir(), 'parley-fresh-'));
    try {
      for (const entry of ['package.json', 'package-lock.json', 'scripts']) cpSync(join(ROOT, entry), join(fresh, entry), { recursive: true });
      mkdirSync(join(fresh, 'src'));
      const bin = join(fresh, 'fake-bin');
      mkdirSync(bin);
      const locked = Object.entries(JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages as Record<string, { os?: string[] }>);
      const placed = locked.filter(([p, info]) => p.startsWith('node_modules/') && !info.os).map(([p]) => p).slice(0, 3);
      const place = placed.map((p) => `sleep 0.2; mkdir -p '${p}' && echo '{}' > '${p}/package.json'`).join('\n');
      writeFileSync(join(bin, 'npm'), `#!/bin/sh\n[ "$1" = ci ] || exit 1\n${place}\n`, { mode: 0o755 });
      const done = await run('bash', ['scripts/setup.sh', '--runtime'], { cwd: fresh, env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, PROGRESS_EVERY_MS: '100' } });
      const steps = done.stderr.split('\n').filter((l) => /^setup:/.test(l));
      assert.equal(steps[0], 'setup: installing the npm packages (npm ci; better-sqlite3 compiles once they are in place)');
      assert.ok(steps.some((l) => /^setup: npm ci: \d+ of \d+ packages in place, \d+ s$/.test(l)), `a count and the time so far while npm ci runs:\n${steps.join('\n')}`);
      const total = /^setup: npm ci: done in \d+ s, 3 of (\d+) packages in place$/m.exec(done.stderr);
      assert.ok(total, `the count at the end:\n${steps.join('\n')}`);
      assert.ok(Number(total[1]) > 100, "the lock's packages for this platform");
      assert.deepEqual(steps.filter((l) => ESTIMATES.test(l)), []);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});

describe('GET / and the ready line', () => {
  test('default settings: GET / in headless Chromium is the demo, and a call connects from it', async () => {
    const server = await startServer();
    const browser = await launchBrowser();
    try {
      const context = await browser.browser.newContext();
      const page = await context.newPage();
      await page.goto(`${server.baseUrl}/`);
      await page.waitForFunction(() => !(document.getElementById('model') as HTMLSelectElement).disabled, null, { timeout: 15_000 });
      await page.selectOption('#model', 'audio-echo');
      await page.click('#talk');
      await page.waitForFunction(() => (window as any).parleyDemo.state === 'connected', null, { timeout: 30_000 });
      await context.close();
    } finally {
      await browser.close();
      await server.stop();
    }
  });

  test('default settings: a request a proxy forwarded gets no demo token (403), a direct one does', async () => {
    const server = await startServer();
    try {
      const forwarded = await http(server.baseUrl, '/demo/session', { body: {}, headers: { 'x-forwarded-for': '203.0.113.9' } });
      assert.equal(forwarded.status, 403);
      assert.equal(forwarded.body.error.code, 'demo_local_only');
      assert.match(forwarded.body.error.message, /DEMO_ENABLED=true/);
      assert.equal((await http(server.baseUrl, '/demo/session', { body: {} })).status, 200);
    } finally {
      await server.stop();
    }
  });

  for (const [what, env] of [
    ['a public bind (HOST=0.0.0.0) without a demo setting', { HOST: '0.0.0.0' }],
    ['DEMO_ENABLED=false on a loopback bind', { DEMO_ENABLED: 'false' }],
    ['a reverse proxy in front (TRUST_PROXY) without a demo setting', { TRUST_PROXY: 'loopback' }],
  ] as const) {
    test(`${what}: GET / describes the service, the demo is off, the ready line says so`, async () => {
      const server = await startServer(env);
      try {
        assert.match(server.stdout(), /parley ready at http:\/\/127\.0\.0\.1:\d+ — the API .*\/openapi\.json.*DEMO_ENABLED=true/);
        const index = await http(server.baseUrl, '/');
        assert.equal(index.status, 200);
        assert.equal(index.body.openapi, '/openapi.json');
        assert.equal(index.body.readiness, '/readyz');
        assert.match(index.body.demo, /DEMO_ENABLED=true/);
        assert.equal((await http(server.baseUrl, index.body.openapi)).status, 200);
        assert.equal((await http(server.baseUrl, '/demo/session', { body: {} })).status, 404);
        assert.equal((await http(server.baseUrl, '/demo/demo.js')).status, 404);
      } finally {
        await server.stop();
      }
    });
  }
});

describe('logs', () => {
  const CLI = [...PARLEY, 'serve'];

  /** Runs a node at a terminal (util-linux `script` gives it a pseudo-terminal) or on pipes. */
  async function exercise(terminal: boolean, extra: Record<string, string>): Promise<{ output: string; devKey: string; tokens: string[] }> {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-logs-'));
    const env = serverEnv(dataDir, { LOG_LEVEL: 'trace', ...extra });
    const node = [process.execPath, ...CLI];
    const server = terminal
      ? await startUntilReady('script', ['-qfec', node.map((a) => `'${a}'`).join(' '), '/dev/null'], ROOT, env)
      : await startUntilReady(node[0]!, node.slice(1), ROOT, env);
    try {
      const devKey = /(sk_parley_ai_\w+)/.exec(server.output())?.[1] ?? '';
      assert.ok(devKey, 'a first start prints its development key');
      const tokens: string[] = [];
      for (let i = 0; i < 2; i++) {
        const minted = await http(server.baseUrl, '/v1/realtime/client-secrets', { token: devKey, body: {} });
        assert.equal(minted.status, 200);
        tokens.push(minted.body.ephemeral_token);
        assert.equal((await http(server.baseUrl, '/v1/realtime/ice-config', { token: minted.body.ephemeral_token })).status, 200);
      }
      // A token where it does not belong, in a request the node logs as refused (a body nested too deep).
      const tooDeep = '['.repeat(100) + ']'.repeat(100);
      assert.equal((await http(server.baseUrl, `/v1/realtime/calls?token=${tokens[0]}`, { token: tokens[1], rawBody: tooDeep, headers: { 'content-type': 'application/json' } })).status, 422);
      await until('the refused request in the log', () => server.output(), (o) => o.includes('request body nested too deep'));
      return { output: server.output(), devKey, tokens };
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  function assertNoSecrets({ output, devKey, tokens }: { output: string; devKey: string; tokens: string[] }): void {
    // The development key is shown once, on its own line (stdout, which a terminal shows with the logs).
    const withKey = output.split('\n').filter((l) => l.includes(devKey));
    assert.equal(withKey.length, 1, `the development key appears once: ${withKey.join(' | ')}`);
    assert.match(withKey[0]!, /created development API key/);
    for (const t of tokens) assert.ok(!output.includes(t), 'no token in the logs');
  }

  const logLines = (output: string) => output.split(/\r?\n/).filter((l) => l.trim() && !/parley ready at|created development API key/.test(l));

  test('at a terminal: readable lines, no secrets', async () => {
    const run = await exercise(true, {});
    const lines = logLines(run.output);
    assert.ok(lines.length > 5, `log lines: ${lines.length}`);
    assert.ok(lines.every((l) => !l.trimStart().startsWith('{')), `no JSON line: ${lines.find((l) => l.trimStart().startsWith('{'))}`);
    assert.ok(lines.some((l) => /INFO/.test(l) && /embedded STUN server listening/.test(l)), 'a level and a message on one line');
    assertNoSecrets(run);
  });

  test('at a terminal with LOG_FORMAT=json, and on pipes: one JSON object a line, no secrets', async () => {
    for (const run of [await exercise(true, { LOG_FORMAT: 'json' }), await exercise(false, {})]) {
      const lines = logLines(run.output);
      assert.ok(lines.length > 5, `log lines: ${lines.length}`);
      for (const line of lines) assert.equal(typeof JSON.parse(line).level, 'number', line);
      assertNoSecrets(run);
    }
  });
});

describe('a port in use', () => {
  /** Each port setting: what holds its port (the first kind its listener binds), the settings that start it, and the line. */
  const cases: { setting: string; holds: 'udp' | 'tcp'; env: (port: number, dir: string) => Record<string, string>; line: (port: number) => string }[] = [
    { setting: 'PORT', holds: 'tcp', env: (port) => ({ PORT: String(port) }), line: (port) => `Parley cannot listen on 127.0.0.1:${port}: the port is in use; change PORT, or stop what holds it` },
    {
      setting: 'STUN_PORT',
      holds: 'udp',
      env: (port) => ({ STUN_PORT: String(port) }),
      line: (port) => `the embedded STUN server cannot listen on 127.0.0.1:${port}: the port is in use (by another STUN/TURN server such as coturn?); change STUN_PORT (or set STUN_ENABLED=false), or stop what holds it`,
    },
    {
      setting: 'TURN_PORT',
      holds: 'tcp',
      env: (port) => ({ TURN_PORT: String(port) }),
      line: (port) => `Parley's TURN server (coturn) cannot listen on 127.0.0.1:${port}: the port is in use (by another TURN server?); change TURN_PORT (or TURN_URLS, or TURN_ENABLED=false), or stop what holds it`,
    },
    {
      setting: 'INTERNAL_PORT',
      holds: 'tcp',
      env: (port) => ({ INTERNAL_PORT: String(port) }),
      line: (port) => `the node-to-node listener cannot listen on 127.0.0.1:${port}: the port is in use; change INTERNAL_PORT (or INTERNAL_HOST), or stop what holds it`,
    },
    { setting: 'SIP_PORT', holds: 'udp', env: (port) => ({ SIP_PORT: String(port) }), line: (port) => `SIP cannot listen on 127.0.0.1:${port}: the port is in use; change SIP_PORT (or SIP_HOST), or stop what holds it` },
    {
      setting: 'SIP_TLS_PORT',
      holds: 'tcp',
      env: (port, dir) => {
        const { cert, key } = makeCertificate(dir);
        return { SIP_PORT: '0', SIP_TLS_PORT: String(port), TLS_CERT_FILE: cert, TLS_KEY_FILE: key };
      },
      line: (port) => `SIP over TLS cannot listen on 127.0.0.1:${port}: the port is in use; change SIP_TLS_PORT, or stop what holds it`,
    },
  ];

  for (const { setting, holds, env, line } of cases) {
    test(`${setting}: one line naming the port and the setting, exit code 1, no stack trace`, async () => {
      const holder = await holdPort(holds);
      const dataDir = mkdtempSync(join(tmpdir(), 'parley-port-'));
      try {
        const proc = spawn(process.execPath, [...PARLEY, 'serve'], { cwd: ROOT, env: serverEnv(dataDir, { LOG_LEVEL: 'warn', ...env(holder.port, dataDir) }), stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        proc.stderr!.on('data', (d) => (stderr += d));
        const code = await new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
        assert.equal(code, 1, stderr);
        assert.equal(stderr.trim().split('\n').at(-1), `parley: ${line(holder.port)}`);
        assert.doesNotMatch(stderr, /^\s+at |FATAL|Error:/m, 'no stack trace');
      } finally {
        await holder.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});

/** Holds a port on 127.0.0.1 (the kernel's pick) with a UDP socket or a TCP listener. */
async function holdPort(kind: 'udp' | 'tcp'): Promise<{ port: number; close: () => Promise<void> }> {
  if (kind === 'udp') {
    const udp = createSocket('udp4');
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    return { port: udp.address().port, close: () => new Promise<void>((r) => udp.close(() => r())) };
  }
  const tcp = createServer();
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  return { port: (tcp.address() as { port: number }).port, close: () => new Promise<void>((r) => tcp.close(() => r())) };
}
