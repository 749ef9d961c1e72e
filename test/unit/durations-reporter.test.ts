// The test runner's durations reporter (test/reporters/durations.mjs): one line per file, its time
// the file's own (process start included) when the runner reports it, its tests counted.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import durations from '../reporters/durations.mjs';

const file = join(process.cwd(), 'test/x.test.ts');
const ev = (type: string, data: Record<string, unknown>) => ({ type, data: { file, nesting: 0, details: {}, ...data } });

async function* events() {
  yield ev('test:pass', { name: 'a', details: { duration_ms: 100 } });
  yield ev('test:pass', { name: 'suite', details: { duration_ms: 60, type: 'suite' } });
  yield ev('test:fail', { name: 'b', nesting: 1, details: { duration_ms: 50 } });
  yield ev('test:complete', { name: file, details: { duration_ms: 1234.4 } });
}

test('one line per file: its own duration, its tests and failures (suites are not tests)', async () => {
  const lines: string[] = [];
  for await (const line of durations(events())) lines.push(line as string);
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [{ file: 'test/x.test.ts', ms: 1234, tests: 2, failed: 1 }]);
});

test('without the file-level report, the top-level tests add up', async () => {
  async function* topLevelOnly() {
    yield ev('test:pass', { name: 'a', details: { duration_ms: 100 } });
    yield ev('test:pass', { name: 'b', details: { duration_ms: 20.6 } });
  }
  const lines: string[] = [];
  for await (const line of durations(topLevelOnly())) lines.push(line as string);
  assert.deepEqual(JSON.parse(lines[0]!), { file: 'test/x.test.ts', ms: 121, tests: 2, failed: 0 });
});
