// The `parley` CLI: keys create / list / revoke against the store a server uses.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { PARLEY, http, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

let server: RunningServer;
before(async () => {
  server = await startServer({ KEY_CACHE_TTL_MS: '100' });
});
after(async () => {
  await server.stop();
});

test('create prints the key once; list shows no secret; revoke gives the nested 401', async () => {
  const created = await server.cli('keys', 'create', '--name', 'backend-a');
  assert.equal(created.code, 0, created.stderr);
  const key = /key:\s+(sk_parley_ai_[0-9A-Za-z]{32,})/.exec(created.stdout)?.[1];
  const id = /id:\s+(key_\w+)/.exec(created.stdout)?.[1];
  assert.ok(key && id, created.stdout);

  const ok = await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: key });
  assert.equal(ok.status, 200);

  const list = await server.cli('keys', 'list');
  assert.equal(list.code, 0);
  assert.match(list.stdout, new RegExp(`${id}\\s+backend-a\\s+sk_parley_ai_\\w{4}…`));
  assert.ok(!list.stdout.includes(key), 'list never shows the key');
  assert.ok(!list.stdout.includes(key.slice(20)), 'nor its secret part');
  const json = JSON.parse((await server.cli('keys', 'list', '--json')).stdout);
  assert.equal(json.find((k: any) => k.id === id).revoked_at, null);
  // snake_case, as the HTTP API's bodies are.
  for (const k of json) assert.deepEqual(Object.keys(k).filter((name) => !/^[a-z0-9_]+$/.test(name)), [], JSON.stringify(k));
  assert.ok('created_at' in json[0] && 'last_used_at' in json[0], JSON.stringify(json[0]));

  const revoked = await server.cli('keys', 'revoke', id);
  assert.equal(revoked.code, 0);
  const denied = await until(
    'the revoked key to be refused',
    () => http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: key }),
    (r) => r.status !== 200,
  );
  assert.equal(denied.status, 401);
  assert.match(denied.body.error.message.message, /incorrect|inactive/i);
  const after = JSON.parse((await server.cli('keys', 'list', '--json')).stdout);
  assert.ok(after.find((k: any) => k.id === id).revoked_at);
});

test('revoking an unknown id fails with a clear message', async () => {
  const r = await server.cli('keys', 'revoke', 'key_doesnotexist');
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /no API key with id key_doesnotexist/);
});

test('the store holds neither API keys nor signing secrets in clear; logs hold no secrets', async () => {
  const created = await server.cli('keys', 'create', '--name', 'scan');
  const key = /key:\s+(sk_parley_ai_\w+)/.exec(created.stdout)![1]!;
  const token = (await http(server.baseUrl, '/v1/realtime/client-secrets', { method: 'POST', token: key })).body.ephemeral_token;
  await http(server.baseUrl, '/v1/realtime/ice-config', { token });
  const dataDir = server.env.DATA_DIR!;
  const dbFiles = readdirSync(dataDir).filter((f) => f.startsWith('parley.db'));
  const raw = Buffer.concat(dbFiles.map((f) => readFileSync(join(dataDir, f)))).toString('latin1');
  assert.ok(!raw.includes(key), 'key not in the database files');
  assert.ok(!raw.includes(server.devKey), 'dev key not in the database files');
  assert.ok(raw.includes(key.slice(0, 17)), 'only the short visible prefix is');
  assert.ok(!server.stderr().includes(key) && !server.stderr().includes(token), 'logs carry no key or token');
});

test("the store's files are readable by their owner only", () => {
  const dir = server.env.DATA_DIR!;
  const files = readdirSync(dir).filter((f) => /^parley\.db(-wal|-shm)?$/.test(f));
  assert.ok(files.includes('parley.db'), files.join(', '));
  for (const f of files) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
});

test('a bad setting stops the CLI with a clear message per problem', async () => {
  const r = await server.cli('keys', 'list');
  assert.equal(r.code, 0);
  const { execFile } = await import('node:child_process');
  const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const p = execFile(process.execPath, [...PARLEY, 'serve'], {
      env: { ...server.env, PORT: 'eighty', TOKEN_TTL_SECONDS: '5', STUN_URLS: 'http://x' },
    }, () => {});
    let stderr = '';
    p.stderr!.on('data', (d) => (stderr += d));
    p.on('exit', (code) => resolve({ code, stderr }));
  });
  assert.equal(out.code, 2);
  assert.match(out.stderr, /PORT: expected an integer/);
  assert.match(out.stderr, /TOKEN_TTL_SECONDS: must be between 10 and 3600/);
  assert.match(out.stderr, /STUN_URLS: .*not a stun/);
});

test('--version prints the package version', async () => {
  const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string };
  const r = await server.cli('--version');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), version);
});

test('a required option says so in --help, and leaving it out says which one', async () => {
  const help = await server.cli('keys', 'create', '--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--name <name>\s+.*\(required\)/);
  const r = await server.cli('keys', 'create');
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /required option '--name <name>' not specified/);
  assert.equal(r.stdout, '', 'no key was created');
});

test('revoking a revoked key says it was already revoked, and succeeds', async () => {
  const created = await server.cli('keys', 'create', '--name', 'twice');
  const id = /id:\s+(key_\w+)/.exec(created.stdout)![1]!;
  const first = await server.cli('keys', 'revoke', id);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout, `revoked ${id}\n`);
  const again = await server.cli('keys', 'revoke', id);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, `${id} was already revoked\n`);
});

test('a DATA_DIR that is not a usable directory is one line naming the setting and the path', async () => {
  // A file where the directory should be: unusable even for root, who may write anywhere else.
  const file = join(server.env.DATA_DIR!, 'not-a-directory');
  writeFileSync(file, '');
  const { execFile } = await import('node:child_process');
  for (const args of [['serve'], ['keys', 'list']]) {
    const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const p = execFile(process.execPath, [...PARLEY, ...args], { env: { ...server.env, DATA_DIR: file, PORT: '0' } }, () => {});
      let stderr = '';
      p.stderr!.on('data', (d) => (stderr += d));
      p.on('exit', (code) => resolve({ code, stderr }));
    });
    assert.equal(out.code, 1, args.join(' '));
    assert.equal(out.stderr, `parley: DATA_DIR=${file}: ${file} is not a directory; set DATA_DIR to a directory this user (uid ${process.getuid!()}) can write, or fix its permissions\n`);
  }
});

const PROBE = new URL('./helpers/serviceProbe.mjs', import.meta.url).href;

/** Runs `node --import serviceProbe …args` and returns what the probe noted (spawns, ports bound, the service's modules loaded). */
async function probed(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; noted: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-probe-'));
  const file = join(dir, 'noted');
  writeFileSync(file, '');
  try {
    const code = await promisify(execFile)(process.execPath, ['--import', PROBE, ...args], { env: { ...env, PARLEY_PROBE_FILE: file } }).then(
      () => 0,
      (e: { code: number }) => e.code,
    );
    return { code, noted: readFileSync(file, 'utf8').split('\n').filter(Boolean) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the probe sees a spawned process, a bound port and the service loaded', async () => {
  const script = "require('node:child_process').execFileSync('true'); require('node:net').createServer().listen(0, '127.0.0.1', function () { this.close(); });";
  const r = await probed(['-e', script], server.env);
  assert.equal(r.code, 0);
  assert.deepEqual(r.noted, ['execFileSync true', 'listen']);
  const serve = await probed([...PARLEY, 'serve'], { ...server.env, PORT: 'eighty' });
  assert.equal(serve.code, 2, 'a bad setting stops serve once its modules are loaded');
  assert.ok(serve.noted.some((line) => /\/(server|services)\.(ts|js)$/.test(line)), serve.noted.join('\n'));
});

test('store commands open the store and nothing of the service; --version and --help open nothing', async (t) => {
  const commands = [['keys', 'list'], ['webhooks', 'list'], ['webhooks', 'deliveries'], ['--version'], ['--help'], ['keys', '--help']];
  for (const args of commands) {
    const r = await probed([...PARLEY, ...args], server.env);
    assert.equal(r.code, 0, args.join(' '));
    assert.deepEqual(r.noted, [], `parley ${args.join(' ')}: no process spawned, no port bound, no service module loaded`);
  }
  // Measured, not asserted: the wall time a user waits, median of 3 runs each.
  for (const args of [['keys', 'list'], ['--version'], ['webhooks', 'list']]) {
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const r = await server.cli(...args);
      times.push(performance.now() - started);
      assert.equal(r.code, 0, r.stderr);
    }
    t.diagnostic(`parley ${args.join(' ')}: median ${Math.round(times.sort((a, b) => a - b)[1]!)} ms of ${times.map(Math.round).join(', ')} (${PARLEY.join(' ')})`);
  }
});
