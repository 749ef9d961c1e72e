// Claiming from the webhook outbox on SQLite and on PostgreSQL (a PostgreSQL server started for the
// file): two nodes on one store take each delivery once, one per endpoint at a time.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { openDatabase, type Db } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrations.ts';
import { WebhookEndpointStore } from '../../src/webhooks/endpoints.ts';
import { webhookEvent } from '../../src/webhooks/events.ts';
import { WebhookOutbox } from '../../src/webhooks/outbox.ts';
import { newWebhookSecret } from '../../src/webhooks/secrets.ts';

let dir: string;
let pg: TestPostgres;
const stores: { name: string; db: Db }[] = [];
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-webhooks-unit-'));
  pg = await startTestPostgres();
  stores.push({ name: 'SQLite', db: (await openDatabase(`sqlite:${join(dir, 'parley.db')}`)).db }, { name: 'PostgreSQL', db: (await openDatabase(pg.url)).db });
  for (const { db } of stores) await migrate(db);
});
after(async () => {
  for (const { db } of stores) await db.destroy();
  await pg?.destroy();
  rmSync(dir, { recursive: true, force: true });
});

for (const backend of ['SQLite', 'PostgreSQL']) {
  test(`claims on ${backend}: each due delivery goes to one claimer, one per endpoint at a time, and a lapsed lease is taken again`, async () => {
    const db = stores.find((s) => s.name === backend)!.db;
    const endpoints = new WebhookEndpointStore(db, 'p'.repeat(32), undefined);
    // Nodes (or workers) starting at once record the global endpoint once, without failing.
    const global = { url: 'http://127.0.0.1:9/global', secret: newWebhookSecret(), events: ['call.ended' as const] };
    await Promise.all([1, 2, 3].map(() => new WebhookEndpointStore(db, 'p'.repeat(32), global).syncGlobal()));
    assert.deepEqual((await endpoints.list()).map((e) => [e.id, e.url]), [['global', global.url]]);
    const a = (await endpoints.add('key_a', 'http://127.0.0.1:9/a')).endpoint;
    const b = (await endpoints.add('key_a', 'http://127.0.0.1:9/b')).endpoint;
    const outbox = new WebhookOutbox(db);
    for (let i = 0; i < 3; i++) await outbox.enqueue(webhookEvent('call.ended', { i }), 'key_a', [a, b]);
    const now = Date.now();
    const [first, second] = await Promise.all([outbox.claimDue(10, 1000, new Set(), now), new WebhookOutbox(db).claimDue(10, 1000, new Set(), now)]);
    const claimed = [...first!, ...second!];
    for (const mine of [first!, second!]) assert.deepEqual(mine.map((d) => d.endpointId).sort(), [a.id, b.id].sort(), 'one per endpoint on each node');
    assert.equal(new Set(claimed.map((d) => d.id)).size, 4, 'never the same row twice');
    assert.ok(claimed.every((d) => d.attempts === 1));
    assert.deepEqual((await outbox.claimDue(10, 1000, new Set([a.id]), now)).map((d) => d.endpointId), [b.id], 'the endpoint in flight waits');
    assert.deepEqual((await outbox.claimDue(10, 1000, new Set([b.id]), now)).map((d) => d.endpointId), [a.id]);
    assert.deepEqual(await outbox.claimDue(10, 1000, new Set(), now), [], 'every row is claimed');
    // A crashed node's claim lapses: the row is claimed again, as a second attempt.
    const retaken = await outbox.claimDue(10, 1000, new Set(), now + 1001);
    assert.deepEqual(retaken.map((d) => d.endpointId).sort(), [a.id, b.id].sort(), JSON.stringify(retaken));
    assert.ok(retaken.every((d) => d.attempts === 2));
    // A backlog for one endpoint does not hide the others' rows while it is busy.
    const c = (await endpoints.add('key_a', 'http://127.0.0.1:9/c')).endpoint;
    for (let i = 0; i < 50; i++) await outbox.enqueue(webhookEvent('call.turn', { i }), 'key_a', [a]);
    await outbox.enqueue(webhookEvent('call.ended', {}), 'key_a', [c]);
    const later = Date.now() + 2000;
    assert.deepEqual((await outbox.claimDue(1, 1000, new Set([a.id, b.id]), later)).map((d) => d.endpointId), [c.id]);
    // Settled deliveries are forgotten after their retention; pending ones never.
    await outbox.delivered(retaken[0]!.id, 204);
    assert.equal(await outbox.prune(new Date(Date.now() - 60_000)), 0);
    assert.equal(await outbox.prune(new Date(Date.now() + 60_000)), 1);
    assert.deepEqual((await outbox.list({ limit: 100 })).filter((d) => d.id === retaken[0]!.id), []);
    assert.equal((await outbox.list({ limit: 100 })).filter((d) => d.status === 'pending').length, 5 + 51);
  });
}
