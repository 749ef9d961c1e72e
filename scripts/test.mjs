#!/usr/bin/env node
// The test tiers (docs/development.md). Run through `npm run test:*`, which starts this with tsx
// loaded so that the test files' processes inherit it.
//   unit    the unit tests (test/unit): pure code on fake timers, no child process, no model, no
//           server; each test has 5 s. The files share a few processes (scripts/test-shard.mjs).
//   engines the tests of the speech, vision and storage engines (test/engines): they start programs
//           (flite, ffmpeg, opus-tools, openssl, PostgreSQL) or load models (Silero, PocketSphinx)
//   fast    type check, unit, engines, and the integration tests that run in-process or start one
//           server and no browser, SIP user agent, cluster or release build (FAST_FILES)
//   all     type check, one build of dist/, then every test file, the servers they start running
//           from dist/ (PARLEY_TEST_SERVER=dist) rather than through tsx
//   FILE…   just those files, one at a time (servers from the sources through tsx)
// Every run writes each file's duration to test-artifacts/durations-<tier>.jsonl and prints the
// slowest ten. In `all`, the files of PARALLEL_FILES, the unit shards and the engine tests run three
// at a time, then the rest one at a time: those measure rates, delays and audio on a 2-core machine,
// so they have it to themselves. One closing line counts the whole run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FileDurations } from '../test/reporters/durations.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

/** Integration tests that start no browser, no SIP user agent, no cluster and no release: test:fast. */
const FAST_FILES = ['test/container-files.test.ts', 'test/openapi.test.ts', 'test/docs.test.ts', 'test/services-startup.test.ts', 'test/pocketsphinx.test.ts'].map((f) => join(root, f));

/**
 * Files that mostly wait (on timers, restarts, other processes) and assert no rate, delay or audio
 * quality: they run three at a time, beside the unit tests, longest first (the production install
 * under Node 24 alone takes one slot for about three minutes). Each has its own store, Redis and
 * ports. The leak test measures memory, not time, so it waits here too. (tls-dev-cert stays out:
 * its example's spoken question went unanswered for 60 s once with three files beside it.)
 */
const PARALLEL_FILES = [
  'production-install', 'leak', 'first-start', 'webhooks', 'webhook-destinations', 'turn-relay', 'sip-routing', 'openai-community-clients',
  'http-limits', 'turn-relay-abuse', 'revocation', 'outage', 'reconcile', 'tokens', 'cli', 'console', 'nodes', 'rate-limits',
  'openai-transcription', 'sip-outbound', 'sip-workers', 'openai-mcp', 'admission', 'workers', 'postgres', 'contract', 'stun', 'sip-routing-nodes',
  'offer-fuzz', 'candidates', 'ice', 'datachannel', 'openai-http', 'services-startup', 'openapi', 'docs', 'recording-limits',
  'data-dir', 'sideband-limits', 'container-files', 'key-limits-across-nodes', 'sip-guards', 'node-listener', 'openai-mcp-floods',
  'kubernetes-manifests', 'prometheus-rules', 'sip-rfc', 'sipp', 'models', 'picture-floods',
].map((name) => join(root, 'test', `${name}.test.ts`));

const listTests = (dir) =>
  readdirSync(join(root, dir))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => join(root, dir, f));

/** A unit test's own time limit (scripts/test-shard.mjs). */
const UNIT_TEST_TIMEOUT_MS = 5_000;

/** Each test file's time in the latest run that ran it (test-artifacts/durations-*.jsonl), ms. */
function lastDurations() {
  const dir = join(root, 'test-artifacts');
  const times = new Map();
  if (!existsSync(dir)) return times;
  const runs = readdirSync(dir)
    .filter((f) => /^durations-.+\.jsonl$/.test(f))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
  for (const run of runs) {
    for (const line of readFileSync(run, 'utf8').split('\n').filter(Boolean)) {
      const { file, ms } = JSON.parse(line);
      times.set(join(root, file), ms);
    }
  }
  return times;
}

/** `{ path, ms }` entries as the runner takes them: the longest first, so that the last to finish is a short one. */
const longestFirst = (entries) => [...entries].sort((a, b) => b.ms - a.ms).map((e) => e.path);

/**
 * The unit test files split into `count` processes, balanced by each file's time in its latest run
 * (a file never run counts 1 s): writes one entry module a process under test-artifacts/unit-shards/
 * and returns them with their expected times.
 */
function unitShards(files, count, times) {
  const shards = Array.from({ length: Math.min(count, files.length) }, () => ({ ms: 0, files: [] }));
  // Longest first, each to the shard with the least so far.
  for (const file of [...files].sort((a, b) => (times.get(b) ?? 1000) - (times.get(a) ?? 1000))) {
    const shard = shards.reduce((least, s) => (s.ms < least.ms ? s : least));
    shard.files.push(file);
    shard.ms += times.get(file) ?? 1000;
  }
  const dir = join(root, 'test-artifacts', 'unit-shards');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const runner = pathToFileURL(join(root, 'scripts/test-shard.mjs')).href;
  return shards.map((shard, i) => {
    const path = join(dir, `shard-${i + 1}.mjs`);
    writeFileSync(path, `// Written by scripts/test.mjs: these unit test files in one process.\nimport { runShard } from ${JSON.stringify(runner)};\nawait runShard(${JSON.stringify(shard.files.sort(), null, 2)}, ${UNIT_TEST_TIMEOUT_MS});\n`);
    return { path, ms: shard.ms };
  });
}

function step(label, command, args) {
  const started = performance.now();
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    console.error(`test: ${label} failed`);
    process.exit(result.status ?? 1);
  }
  console.log(`test: ${label} took ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

// Incremental: the files unchanged since the last check (test-artifacts/tsc.tsbuildinfo) are not checked again.
const typecheck = () =>
  step('type check', process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '--incremental', '--tsBuildInfoFile', join(root, 'test-artifacts', 'tsc.tsbuildinfo')]);

/**
 * Runs `groups` one after another through one reporter, writes each file's duration to
 * `durationsFile` and prints the slowest ten; resolves to the counts.
 */
async function runFiles(groups, durationsFile) {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const fileDurations = new FileDurations();
  async function* events() {
    for (const { files, concurrency } of groups) {
      if (files.length === 0) continue;
      // A file whose tests are done ends even if something it started still holds its event loop;
      // a test that hangs fails after ten minutes (the longest, the release build, takes two).
      for await (const event of run({ files, concurrency, forceExit: true, timeout: 10 * 60_000 })) {
        // Each run closes with its own totals; one line of totals for the whole is printed below.
        if (event.type === 'test:diagnostic' && event.data.nesting === 0 && !event.data.file) continue;
        // A file whose process failed outside any test (it did not load, it exited early) fails too.
        if (event.type === 'test:fail' && event.data.name === event.data.file) counts.failed += 1;
        else if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.details?.type !== 'suite' && event.data.name !== event.data.file) {
          if (event.data.skip || event.data.todo) counts.skipped += 1;
          else if (event.type === 'test:pass') counts.passed += 1;
          else counts.failed += 1;
        }
        fileDurations.add(event);
        yield event;
      }
    }
  }
  await new Promise((resolveDone, reject) => {
    const out = Readable.from(events(), { objectMode: true }).pipe(new spec());
    out.pipe(process.stdout, { end: false });
    out.on('end', resolveDone);
    out.on('error', reject);
  });
  // A unit shard's own line is its process; its files have theirs.
  const perFile = fileDurations.results().filter((f) => !f.file.startsWith('test-artifacts/'));
  mkdirSync(dirname(durationsFile), { recursive: true });
  writeFileSync(durationsFile, perFile.map((f) => JSON.stringify(f)).join('\n') + '\n');
  console.log(`\nslowest files (all: ${relative(root, durationsFile)}):`);
  for (const f of [...perFile].sort((a, b) => b.ms - a.ms).slice(0, 10)) console.log(`  ${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.file} (${f.tests} tests)`);
  return counts;
}

let [tier = 'all', ...rest] = process.argv.slice(2);
const started = performance.now();
const unitFiles = listTests('test/unit');
const engineFiles = listTests('test/engines');
const times = lastDurations();
const timed = (files) => files.map((path) => ({ path, ms: times.get(path) ?? 1000 }));
// One process a core: the shards' tests wait on little, and a process's start is most of a unit file's cost.
const unit = () => unitShards(unitFiles, Math.max(2, availableParallelism()), times);
let groups;
switch (tier) {
  case 'unit': {
    const shards = unit();
    groups = [{ files: shards.map((s) => s.path), concurrency: shards.length }];
    break;
  }
  case 'engines':
    groups = [{ files: longestFirst(timed(engineFiles)), concurrency: 2 }];
    break;
  case 'fast':
    typecheck();
    groups = [{ files: longestFirst([...unit(), ...timed([...engineFiles, ...FAST_FILES])]), concurrency: 2 }];
    break;
  case 'all': {
    typecheck();
    step('build', process.execPath, [join(root, 'scripts/build.mjs')]);
    process.env.PARLEY_TEST_SERVER = 'dist';
    const integration = listTests('test');
    const missing = PARALLEL_FILES.filter((f) => !integration.includes(f));
    if (missing.length) throw new Error(`PARALLEL_FILES names files that do not exist: ${missing.join(', ')}`);
    groups = [
      // Three at once on two cores: together they use under half of the machine (they wait).
      { files: [...PARALLEL_FILES, ...unit().map((s) => s.path), ...engineFiles], concurrency: 3 },
      { files: integration.filter((f) => !PARALLEL_FILES.includes(f)), concurrency: 1 },
    ];
    break;
  }
  default:
    groups = [{ files: [tier, ...rest].map((f) => resolve(f)), concurrency: 1 }];
    tier = 'files';
}

const counts = await runFiles(groups, join(root, 'test-artifacts', `durations-${tier}.jsonl`));
const minutes = (performance.now() - started) / 60_000;
console.log(`\ntest: ${tier} took ${minutes.toFixed(1)} min`);
// The closing line, for the whole run (each group's runner printed none).
console.log(`${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
process.exitCode = counts.failed > 0 || counts.passed === 0 ? 1 : 0;
