// DATA_DIR's mode at start: an existing DATA_DIR of Parley's user left 0755 (as mkdir makes it) is
// 0700 once the server started; another user's is left as it is, and the log says so. One server
// per DATA_DIR: a second start on a folder in use says so and leaves the first alone. Waits for the
// servers only: no timing is asserted.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { allocateRelay } from './helpers/coturn.ts';
import { childPids } from './helpers/processes.ts';
import { PARLEY, http, mintToken, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');

let root: string;
before(() => {
  root = mkdtempSync(join(tmpdir(), 'parley-datadir-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => statSync(path).mode & 0o777;

test("an existing 0755 DATA_DIR of Parley's user is 0700 after start", async () => {
  const dir = join(root, 'ours');
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  const server = await startServer({ DATA_DIR: dir });
  try {
    assert.equal(modeOf(dir).toString(8), '700');
  } finally {
    await server.stop();
  }
});

test("another user's 0755 DATA_DIR is left as it is, with a warning", { skip: process.getuid?.() !== 0 && 'needs root, to give the directory to another user' }, async () => {
  const dir = join(root, 'theirs');
  mkdirSync(dir);
  chmodSync(dir, 0o755);
  chownSync(dir, 65534, 65534);
  const server = await startServer({ DATA_DIR: dir });
  try {
    assert.equal(modeOf(dir).toString(8), '755');
    assert.match(server.stderr() + server.stdout(), /is mode 0755 and owned by uid 65534, not this user \(uid 0\): left as it is/);
  } finally {
    await server.stop();
  }
});

/** The TURN entry ice-config hands out (present once Parley's coturn answers). */
async function turnOf(server: RunningServer): Promise<{ port: number; username: string; credential: string } | undefined> {
  const ice = await http(server.baseUrl, '/v1/realtime/ice-config', { token: await mintToken(server.baseUrl, server.devKey) });
  const turn = (ice.body?.iceServers ?? []).find((s: { username?: string }) => s.username);
  if (!turn) return undefined;
  return { port: Number(/:(\d+)\?transport=udp/.exec(turn.urls.find((u: string) => u.includes('udp')))![1]), username: turn.username, credential: turn.credential };
}

/** The server's coturn: its child process running turnserver. */
function coturnPid(server: RunningServer): number | undefined {
  return childPids(server.proc.pid!).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('turnserver');
    } catch {
      return false;
    }
  });
}

/** What the first server wrote for itself and its coturn, with when it was last written. */
function ownFiles(dir: string): Record<string, string> {
  const files = ['secrets.json', 'node-id', 'coturn/turnserver.conf', 'coturn/coturn.pid'];
  return Object.fromEntries(files.map((f) => [f, `${statSync(join(dir, f)).mtimeMs} ${readFileSync(join(dir, f), 'utf8')}`]));
}

test("a second server on a DATA_DIR in use says so and exits 1, leaving the first, its coturn and its files alone; a killed server's lock goes with it", async () => {
  const dir = join(root, 'in-use');
  const first = await startServer({ DATA_DIR: dir });
  try {
    await until("the first server's coturn in ice-config", () => turnOf(first), Boolean, 60_000);
    const coturn = coturnPid(first);
    assert.ok(coturn, 'the first server runs its coturn');
    const files = ownFiles(dir);

    // The same settings, the same folder (every port is 0: only the folder is shared).
    const second = await run(process.execPath, [...PARLEY, 'serve'], { cwd: ROOT, env: first.env, timeout: 180_000 }).then(
      (r) => ({ code: 0, ...r }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    assert.equal(second.code, 1, second.stdout + second.stderr);
    assert.equal(second.stderr, `parley: DATA_DIR=${dir}: ${dir} is in use by another Parley server (pid ${first.proc.pid}); stop that one first, or give this one a DATA_DIR of its own\n`);
    assert.doesNotMatch(second.stdout, /parley ready/);

    assert.equal(first.proc.exitCode, null, 'the first server runs on');
    assert.equal(coturnPid(first), coturn, 'the same coturn process');
    assert.doesNotMatch(first.stderr(), /coturn stopped|previous run left behind/);
    assert.deepEqual(ownFiles(dir), files, 'its files untouched');
    const turn = await turnOf(first);
    assert.ok(turn, 'its ice-config still hands out its TURN server');
    const relay = await allocateRelay({ port: turn.port }, turn.username, turn.credential);
    assert.ok(relay.ok, `its coturn allocates a relay: ${JSON.stringify(relay)}`);
  } finally {
    // Killed: no clean-up of its own runs, and no lock may outlive it.
    await first.stop('SIGKILL', { keepData: true });
  }
  const again = await startServer({ DATA_DIR: dir, CREATE_DEV_KEY: 'false' });
  await again.stop();
});
