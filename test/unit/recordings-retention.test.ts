// Recordings: which calls are recorded (the server's setting unless the key chose), and retention
// deleting only recordings older than RECORDING_RETENTION_DAYS.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { Recordings } from '../../src/recordings/recordings.ts';
import { randomId } from '../../src/system/ids.ts';

const log = pino({ level: 'silent' });

test("a key's own choice wins over RECORDING; no choice follows it", async () => {
  const choices: Record<string, 'on' | 'off' | null> = { key_on: 'on', key_off: 'off', key_none: null };
  for (const byDefault of [true, false]) {
    const recordings = new Recordings({ byDefault, dir: tmpdir(), retentionDays: 0, maxBytes: 1e9, minFreeBytes: 0 }, async (id) => choices[id] ?? null, log);
    assert.equal(await recordings.wanted('key_on'), true);
    assert.equal(await recordings.wanted('key_off'), false);
    assert.equal(await recordings.wanted('key_none'), byDefault);
  }
});

test('retention deletes the recordings older than its days, and nothing else', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-retention-'));
  try {
    const recordings = new Recordings({ byDefault: true, dir, retentionDays: 7, maxBytes: 1e9, minFreeBytes: 0 }, async () => null, log);
    const now = Date.now();
    const file = (name: string, ageDays: number) => {
      writeFileSync(join(dir, name), 'x');
      const at = (now - ageDays * 86_400_000) / 1000;
      utimesSync(join(dir, name), at, at);
    };
    file('conv_old.opus', 8);
    file('conv_new.opus', 6);
    file('notes.txt', 30);
    assert.equal(await recordings.deleteExpired(now), 1);
    assert.equal(existsSync(join(dir, 'conv_old.opus')), false);
    assert.equal(existsSync(join(dir, 'conv_new.opus')), true);
    assert.equal(existsSync(join(dir, 'notes.txt')), true, 'files that are no recordings stay');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a conversation id that cannot name a file has no recording file', () => {
  const recordings = new Recordings({ byDefault: true, dir: tmpdir(), retentionDays: 0, maxBytes: 1e9, minFreeBytes: 0 }, async () => null, log);
  assert.equal(recordings.fileName('conv_abc123'), 'conv_abc123.opus');
  assert.equal(recordings.fileName('../etc/passwd'), null);
  assert.equal(recordings.fileName('-rf'), null);
});

test('every conversation id the server makes names a recording file (base64url holds - and _)', () => {
  const recordings = new Recordings({ byDefault: true, dir: tmpdir(), retentionDays: 0, maxBytes: 1e9, minFreeBytes: 0 }, async () => null, log);
  assert.equal(recordings.fileName('conv_Hb1ND19G64EpYR909-pAWQ'), 'conv_Hb1ND19G64EpYR909-pAWQ.opus');
  for (let i = 0; i < 1000; i++) {
    const id = randomId('conv_');
    assert.equal(recordings.fileName(id), `${id}.opus`);
  }
});
