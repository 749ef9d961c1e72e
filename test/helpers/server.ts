// Starts a real Parley process on loopback (port 0) with its own data directory, and stops it.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const ROOT = resolve(import.meta.dirname, '../..');
/**
 * How to run `parley`: the build in dist/ when the test runner made one for this run
 * (PARLEY_TEST_SERVER=dist, `npm test`: a process starts in about half the time), else the sources
 * through tsx (a test file run on its own sees every edit).
 */
export const PARLEY: readonly string[] =
  process.env.PARLEY_TEST_SERVER === 'dist' ? [join(ROOT, 'dist/cli/main.js')] : ['--import', 'tsx', join(ROOT, 'src/cli/main.ts')];
const run = promisify(execFile);

export interface RunningServer {
  baseUrl: string;
  /** The development key printed on first start. */
  devKey: string;
  env: NodeJS.ProcessEnv;
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Runs `parley <args>` against the same store. */
  cli: (...args: string[]) => Promise<{ stdout: string; stderr: string; code: number }>;
  stop: (signal?: NodeJS.Signals, opts?: { keepData?: boolean }) => Promise<number | null>;
}

/** A test server's network: loopback only, every port picked by the system. */
export const LOOPBACK_SERVER_ENV = {
  HOST: '127.0.0.1',
  PORT: '0',
  ICE_BIND_ADDRESS: '127.0.0.1',
  // Parallel test servers must not fight over the embedded STUN server's 3478 nor their coturn's 3479.
  STUN_PORT: '0',
  TURN_PORT: '0',
  LOG_LEVEL: 'warn',
  // The suite's files share two cores that are busy throughout: load shedding (LOAD_THRESHOLD, 0.75
  // by default) would refuse calls at random. test/placement.test.ts turns it on where it is tested.
  LOAD_THRESHOLD: '0',
} as const;

/**
 * What the nodes of one test cluster share: the store (and Redis), the secrets every node must
 * agree on, and heartbeats quick enough for a node's loss to be seen within a test.
 */
export function clusterEnv(opts: { databaseUrl: string; redisUrl?: string; lostAfterMs?: number }): Record<string, string> {
  return {
    DATABASE_URL: opts.databaseUrl,
    ...(opts.redisUrl ? { REDIS_URL: opts.redisUrl } : {}),
    API_KEY_PEPPER: randomBytes(32).toString('hex'),
    TURN_SECRETS: randomBytes(24).toString('hex'),
    NODE_HEARTBEAT_MS: '500',
    NODE_LOST_AFTER_MS: String(opts.lostAfterMs ?? 3000),
  };
}

/**
 * Starts `parley serve`. `nodeArgs` go to node itself (e.g. --expose-gc, which makes each /metrics
 * scrape force a full GC before counting live call sessions). DATA_DIR in `extraEnv` is kept at stop.
 */
/**
 * Kills `child` if this process exits first: a test file ended by the runner (forceExit, a timeout)
 * runs no after() hook, and its servers would outlive it, holding ports and CPU.
 */
export function killWithThisProcess(child: ChildProcess): void {
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
}

export async function startServer(extraEnv: Record<string, string> = {}, nodeArgs: string[] = []): Promise<RunningServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-test-'));
  const env: NodeJS.ProcessEnv = { ...process.env, ...LOOPBACK_SERVER_ENV, DATA_DIR: dataDir, ...extraEnv };
  if (env.DATA_DIR !== dataDir) rmSync(dataDir, { recursive: true, force: true });
  const proc = spawn(process.execPath, [...nodeArgs, ...PARLEY, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  killWithThisProcess(proc);
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const ready = await new Promise<{ baseUrl: string; devKey: string }>((resolveReady, reject) => {
    // Generous: a loaded 2-core machine can take long to load the speech engines (under PARLEY_WORKERS,
    // with other test files beside it, 64–80 s was seen); the bound is there to end a hung start.
    const timer = setTimeout(() => {
      // A server that hangs at its start must not keep the test's process alive after the failure.
      proc.kill('SIGKILL');
      reject(new Error(`server did not start:\n${out}\n${err}`));
    }, 180_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /parley ready at (https?:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolveReady({ baseUrl: m[1]!, devKey: /(sk_parley_ai_\w+)/.exec(out)?.[1] ?? '' });
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}\n${err}`));
    });
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  return {
    ...ready,
    env,
    proc,
    stdout: () => out,
    stderr: () => err,
    cli: async (...args) => {
      try {
        const r = await run(process.execPath, [...PARLEY, ...args], { cwd: ROOT, env });
        return { stdout: r.stdout, stderr: r.stderr, code: 0 };
      } catch (e) {
        const x = e as { stdout: string; stderr: string; code: number };
        return { stdout: x.stdout, stderr: x.stderr, code: x.code };
      }
    },
    stop: async (signal = 'SIGTERM', opts = {}) => {
      if (proc.exitCode === null) proc.kill(signal);
      const code = await exited;
      if (!opts.keepData && env.DATA_DIR === dataDir) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/** Settings that turn the rate limits off, for tests and benchmarks that place many requests on purpose. */
export const NO_RATE_LIMITS = { RATE_LIMIT_CLIENT_SECRETS_PER_KEY: '0', RATE_LIMIT_CLIENT_SECRETS_PER_IP: '0', RATE_LIMIT_CALLS_PER_TOKEN: '0', RATE_LIMIT_KEY_LOOKUPS_PER_IP: '0' };

/** Settings that turn the per-key, per-token and half-open call limits off (one key placing many calls on purpose). */
export const NO_CALL_LIMITS = { MAX_CALLS_PER_KEY: '0', MAX_HALF_OPEN_CALLS_PER_KEY: '0', MAX_CALLS_PER_TOKEN: '0', MAX_HALF_OPEN_CALLS: '0' };

/** fetch with JSON conveniences; returns status, headers and the parsed body. */
export async function http(
  baseUrl: string,
  path: string,
  opts: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, { method: opts.method ?? (body !== undefined ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // keep text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** The value of an unlabelled metric on GET /metrics (NaN when absent). */
export async function metric(baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(baseUrl + '/metrics')).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}

export async function mintToken(baseUrl: string, apiKey: string): Promise<string> {
  const r = await http(baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: apiKey, headers: { 'content-type': 'application/json' } });
  if (r.status !== 200) throw new Error(`client-secrets answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.ephemeral_token as string;
}
