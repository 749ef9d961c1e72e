// The registrar's bindings in the store (SQLite here; the same queries run on PostgreSQL): added,
// refreshed in place, expired ones not read, removed one by one or all at once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openDatabase, type OpenDatabase } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrations.ts';
import { SipBindingStore, type SipBinding } from '../../src/storage/sipBindings.ts';

let database: OpenDatabase;
let store: SipBindingStore;

before(async () => {
  database = await openDatabase('sqlite::memory:');
  await migrate(database.db);
  store = new SipBindingStore(database.db);
});

after(() => database.db.destroy());

const binding = (contact: string, expiresAt: number, cseq = 1): SipBinding => ({ aor: 'alice', contact, source: 'udp:192.0.2.7:5060', callId: 'c1', cseq, expiresAt, userAgent: 'desk phone' });

test('bindings: added, refreshed in place, expired ones not read, removed', async () => {
  const now = 1_000_000;
  await store.put(binding('sip:alice@192.0.2.7:5060', now + 60_000), now);
  await store.put(binding('sip:alice@192.0.2.8:5062', now + 10_000), now);
  await store.put({ ...binding('sip:bob@192.0.2.9', now + 60_000), aor: 'bob' }, now);
  assert.deepEqual((await store.of('alice', now)).map((b) => b.contact), ['sip:alice@192.0.2.7:5060', 'sip:alice@192.0.2.8:5062']);
  // A refresh: the same contact, a later CSeq and expiry.
  await store.put(binding('sip:alice@192.0.2.8:5062', now + 120_000, 2), now);
  const [first] = await store.of('alice', now);
  assert.deepEqual(first, binding('sip:alice@192.0.2.8:5062', now + 120_000, 2));
  // Expired: no longer read.
  assert.deepEqual((await store.of('alice', now + 90_000)).map((b) => b.contact), ['sip:alice@192.0.2.8:5062']);
  await store.remove('alice', 'sip:alice@192.0.2.8:5062');
  assert.deepEqual((await store.of('alice', now)).map((b) => b.contact), ['sip:alice@192.0.2.7:5060']);
  await store.remove('alice');
  assert.deepEqual(await store.of('alice', now), []);
  assert.equal((await store.of('bob', now)).length, 1);
});
