// The revocation watcher: a notice ends that key's calls at once; the poll asks the store only
// about keys with live calls (none: no query) and ends the revoked ones' calls; a failing store ends nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { KEY_REVOKED, RevocationWatcher, type RevocableCall } from '../../src/calls/revocationWatcher.ts';

const log = pino({ level: 'silent' });

function fakeCall(apiKeyId: string) {
  const call = {
    apiKeyId,
    endedWith: undefined as string | undefined,
    end(reason: string) {
      call.endedWith = reason;
      return Promise.resolve();
    },
  };
  return call;
}

test('a notice ends only that key\'s calls, with key_revoked', () => {
  const calls = [fakeCall('key_a'), fakeCall('key_b'), fakeCall('key_a')];
  const w = new RevocationWatcher({ liveCalls: () => calls, revokedAmong: async () => [], pollMs: 1000, log });
  w.keyRevoked('key_a');
  assert.deepEqual(calls.map((c) => c.endedWith), [KEY_REVOKED, undefined, KEY_REVOKED]);
});

test('the poll asks about the keys of live calls, once each, and ends the revoked ones', async () => {
  const calls: (RevocableCall & { endedWith?: string })[] = [];
  const asked: string[][] = [];
  const w = new RevocationWatcher({
    liveCalls: () => calls,
    revokedAmong: async (ids) => {
      asked.push(ids);
      return ids.filter((id) => id === 'key_b');
    },
    pollMs: 1000,
    log,
  });
  await w.poll();
  assert.deepEqual(asked, [], 'no live calls: no query');
  calls.push(fakeCall('key_a'), fakeCall('key_b'), fakeCall('key_a'));
  await w.poll();
  assert.deepEqual(asked, [['key_a', 'key_b']]);
  assert.deepEqual(calls.map((c) => c.endedWith), [undefined, KEY_REVOKED, undefined]);
});

test('a store that fails ends nothing and the next poll tries again', async () => {
  const calls = [fakeCall('key_a')];
  let up = false;
  const w = new RevocationWatcher({
    liveCalls: () => calls,
    revokedAmong: async (ids) => {
      if (!up) throw new Error('database down');
      return ids;
    },
    pollMs: 1000,
    log,
  });
  await w.poll();
  assert.equal(calls[0]!.endedWith, undefined);
  up = true;
  await w.poll();
  assert.equal(calls[0]!.endedWith, KEY_REVOKED);
});

test("keys that cannot be listed (coturn's database not there yet) fail the poll, not the process; the next poll tries again", async () => {
  const calls = [fakeCall('key_a')];
  let listable = false;
  const w = new RevocationWatcher({
    liveCalls: () => calls,
    otherKeys: () => {
      if (!listable) throw Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' });
      return ['key_b'];
    },
    revokedAmong: async (ids) => ids.filter((id) => id === 'key_a'),
    pollMs: 1000,
    log,
  });
  await w.poll();
  assert.equal(calls[0]!.endedWith, undefined);
  listable = true;
  await w.poll();
  assert.equal(calls[0]!.endedWith, KEY_REVOKED);
});
