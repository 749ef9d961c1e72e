// DATA_DIR's mode at start: an existing DATA_DIR of Parley's user left 0755 (as mkdir makes it) is
// 0700 once the server started; another user's is left as it is, and the log says so. Waits for
// the server only: no timing is asserted.
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startServer } from './helpers/server.ts';

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
