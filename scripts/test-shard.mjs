// One process for many unit test files (scripts/test.mjs writes the shards that call this). Starting
// Node and tsx for each file cost more CPU than the unit tests themselves (≈ 0.4 s a file; the
// tier's CPU went from ≈ 30 s to ≈ 7 s), so the unit files share a few processes; each file's tests
// still run in order, and the reporters still name each test's own file.
//
// Each top-level test or describe block gets 5 s unless it names its own timeout: a unit test is
// pure code on fake timers, so one that takes seconds is waiting on something real and belongs in
// test/engines/ or an integration test.
import { executionAsyncResource } from 'node:async_hooks';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

/**
 * Imports each test file in turn (their tests then run in that order, as they would alone); a file
 * that fails to load fails as a test. The first test is the loading itself: the runner starts tests
 * as soon as one is registered and, with --test-force-exit, ends the process once none is left, so
 * it holds the others until every file is in (and the time to load them shows as its own).
 */
export async function runShard(files, timeoutMs) {
  let loaded;
  let started;
  const allIn = new Promise((resolve) => (loaded = resolve));
  const ready = new Promise((resolve) => (started = resolve));
  test(`${files.length} unit test files loaded into one process`, { timeout: 2 ** 31 - 1 }, () => {
    // A test is the async resource it runs in. Each test made after this one without a timeout of
    // its own takes its parent's (Node 20: run()'s timeout is the whole file's), or the run's
    // --test-timeout where run() passes one on (Node 24): both are set here, on the root.
    const root = executionAsyncResource()?.root;
    if (root && 'timeout' in root) root.timeout = timeoutMs;
    if (root?.config && typeof root.config === 'object') root.config.timeout = timeoutMs;
    started();
    return allIn;
  });
  await ready;
  for (const file of files) {
    try {
      await import(pathToFileURL(file).href);
    } catch (err) {
      test(`${file} loads`, () => {
        throw err;
      });
    }
  }
  loaded();
}
