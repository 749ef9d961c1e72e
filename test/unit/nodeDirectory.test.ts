// Which node a full node passes a call to: live, not itself, listening, with room; least loaded by
// share of its limit first.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { NodeDirectory } from '../../src/calls/nodeDirectory.ts';
import { openDatabase, type OpenDatabase } from '../../src/storage/db.ts';
import { migrate } from '../../src/storage/migrations.ts';
import { NodeStore } from '../../src/storage/nodes.ts';

let database: OpenDatabase;
let nodes: NodeStore;
before(async () => {
  database = await openDatabase('sqlite::memory:');
  await migrate(database.db);
  nodes = new NodeStore(database.db);
});
after(() => database.db.destroy());

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

test('least loaded by share of its limit first; itself, full, silent, stopped and unreachable nodes never', async () => {
  await nodes.register('self', { url: 'http://10.0.0.1:1', calls: 0, max_calls: 50 });
  await nodes.register('half', { url: 'http://10.0.0.2:1', calls: 50, max_calls: 100 });
  await nodes.register('tenth', { url: 'http://10.0.0.3:1', calls: 1, max_calls: 10 });
  await nodes.register('full', { url: 'http://10.0.0.4:1', calls: 10, max_calls: 10 });
  await nodes.register('silent', { url: 'http://10.0.0.5:1', calls: 0, max_calls: 10 });
  await database.db.updateTable('nodes').set({ heartbeat_at: ago(60_000) }).where('id', '=', 'silent').execute();
  await nodes.register('stopped', { url: 'http://10.0.0.6:1', calls: 0, max_calls: 10 });
  await nodes.markStopped('stopped');
  await nodes.register('no-listener', { calls: 0, max_calls: 10 });

  const directory = new NodeDirectory(nodes, { selfId: 'self', freshForMs: 15_000 });
  assert.deepEqual((await directory.withRoom()).map((n) => n.id), ['tenth', 'half']);
  assert.equal(await directory.urlOf('half'), 'http://10.0.0.2:1');
  assert.equal(await directory.urlOf('stopped'), undefined);
  assert.equal(await directory.urlOf('unknown'), undefined);
});
