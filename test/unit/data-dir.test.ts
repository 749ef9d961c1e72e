// DATA_DIR's mode: an existing one of ours open to other users is closed to them (0700); another
// user's is left as it is, with a warning; a new one is made 0700.
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { dataDirModeAction, ensureDataDir } from '../../src/system/dataDir.ts';

const modeOf = (path: string) => statSync(path).mode & 0o777;

test('the decision: ours and open to others is tightened; another user\'s is warned about; closed ones are kept', () => {
  assert.equal(dataDirModeAction({ uid: 1000, mode: 0o40755 }, 1000), 'tighten');
  assert.equal(dataDirModeAction({ uid: 1000, mode: 0o40750 }, 1000), 'tighten');
  assert.equal(dataDirModeAction({ uid: 1000, mode: 0o40700 }, 1000), 'keep');
  assert.equal(dataDirModeAction({ uid: 0, mode: 0o40755 }, 1000), 'warn');
  assert.equal(dataDirModeAction({ uid: 0, mode: 0o40700 }, 1000), 'keep');
  assert.equal(dataDirModeAction({ uid: 0, mode: 0o40755 }, undefined), 'keep', 'no users (Windows)');
});

test('an existing 0755 DATA_DIR of ours becomes 0700; a missing one is made 0700', () => {
  const root = mkdtempSync(join(tmpdir(), 'parley-datadir-'));
  try {
    const existing = join(root, 'existing');
    ensureDataDir(existing, () => assert.fail('no warning'));
    assert.equal(modeOf(existing), 0o700);
    chmodSync(existing, 0o755);
    const warnings: string[] = [];
    ensureDataDir(existing, (m) => warnings.push(m));
    assert.equal(modeOf(existing), 0o700);
    assert.deepEqual(warnings, []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("another user's 0755 DATA_DIR is left as it is, with a warning", { skip: process.getuid?.() !== 0 && 'needs root, to give the directory to another user' }, () => {
  const root = mkdtempSync(join(tmpdir(), 'parley-datadir-'));
  try {
    const foreign = join(root, 'foreign');
    ensureDataDir(foreign, () => {});
    chmodSync(foreign, 0o755);
    chownSync(foreign, 65534, 65534);
    const warnings: string[] = [];
    ensureDataDir(foreign, (m) => warnings.push(m));
    assert.equal(modeOf(foreign), 0o755);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /mode 0755 and owned by uid 65534, not this user \(uid 0\): left as it is/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

