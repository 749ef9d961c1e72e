// What a node opened is closed newest first, every step even when one fails (logged), and once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Teardown } from '../../src/system/teardown.ts';

test('closes newest first, goes on past a failure (logged), and closes once', async () => {
  const logged: unknown[] = [];
  const teardown = new Teardown({ error: (obj) => logged.push(obj) });
  const closed: string[] = [];
  teardown.add('database', () => void closed.push('database'));
  teardown.add('broken', () => {
    throw new Error('stuck');
  });
  teardown.add('watcher', async () => void closed.push('watcher'));
  await Promise.all([teardown.close(), teardown.close()]);
  await teardown.close();
  assert.deepEqual(closed, ['watcher', 'database']);
  assert.equal(logged.length, 1);
  assert.equal((logged[0] as { resource: string }).resource, 'broken');
});
