// The release build, as the Dockerfile makes it (no container engine runs in CI, so the same script
// runs here): the tracked files copied to a clean directory, `npm ci`, `npm run build`, `npm prune
// --omit=dev`; then the server started from dist/ there, with no dev dependency it could reach,
// answers the key, token and ICE endpoints and a call connects.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { openCall, type RtcClient } from './helpers/rtcClient.ts';
import { LOOPBACK_SERVER_ENV, http, mintToken } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
/** The dev dependencies production does not also need (yaml, for one, is @fastify/swagger's too): the lockfile marks those dev. */
const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
const DEV_DEPENDENCIES = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies).filter(
  (name) => LOCK.packages[`node_modules/${name}`]?.dev,
);

/** This process's environment less what would hand the children tsx or the test runner's state. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const name of ['NODE_OPTIONS', 'NODE_PATH', 'NODE_TEST_CONTEXT']) delete env[name];
  return env;
}

const work = mkdtempSync(join(tmpdir(), 'parley-release-'));
const release = join(work, 'release');
let server: ChildProcess | undefined;
let client: RtcClient | undefined;

before(async () => {
  // A real `npm ci` (better-sqlite3 compiles): minutes on a loaded 2-core machine, once per run.
  await new Promise<void>((resolveBuild, reject) => {
    execFile('bash', [join(ROOT, 'scripts/build-release.sh'), release], { env: cleanEnv(), maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`build-release.sh failed (${err.message}):\n${stdout}\n${stderr}`)) : resolveBuild(),
    );
  });
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

test('the release holds the compiled service and no dev dependency', () => {
  assert.ok(existsSync(join(release, 'dist/cli/main.js')), 'dist/cli/main.js');
  assert.ok(existsSync(join(release, 'dist/http/demo/public/index.html')), "the demo page's static files are copied");
  const left = DEV_DEPENDENCIES.filter((name) => existsSync(join(release, 'node_modules', name, 'package.json')));
  assert.deepEqual(left, [], 'dev dependencies left in node_modules');
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

test('the server started from dist/ answers the three endpoints and a call connects', async () => {
  const dataDir = join(work, 'data');
  const env = cleanEnv({ ...LOOPBACK_SERVER_ENV, DATA_DIR: dataDir });
  const proc = spawn(process.execPath, ['dist/cli/main.js', 'serve'], { cwd: release, env, stdio: ['ignore', 'pipe', 'pipe'] });
  server = proc;
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const started = await until(
    'the ready line',
    () => ({ out, err, exited: proc.exitCode ?? proc.signalCode }),
    (s) => /parley ready at http:\/\/\S+/.test(s.out) || s.exited !== null,
    60_000,
  );
  assert.equal(started.exited, null, `the server exited:\n${out}\n${err}`);
  const baseUrl = /parley ready at (http:\/\/\S+)/.exec(out)![1]!;
  const devKey = /created development API key \S+ .*(sk_parley_ai_\w+)/.exec(out)?.[1];
  assert.ok(devKey, out);

  // The speech engines' worker threads and helper processes start from dist/ too.
  const ready = await until('/readyz to say ready', () => http(baseUrl, '/readyz'), (r) => r.body?.status === 'ready', 120_000);
  assert.equal(ready.status, 200, JSON.stringify(ready.body));

  const token = await mintToken(baseUrl, devKey);
  const ice = await http(baseUrl, '/v1/realtime/ice-config', { token });
  assert.equal(ice.status, 200, JSON.stringify(ice.body));
  assert.ok(Array.isArray(ice.body.iceServers), JSON.stringify(ice.body));

  client = await openCall(baseUrl, token);
  await client.waitConnected(30_000);
  const created = await client.nextEvent('session.created', 30_000);
  assert.equal(created.type, 'session.created');
  assert.equal(err.includes('ERR_MODULE_NOT_FOUND'), false, err);
});
