// How long the CLI takes to answer, as an operator runs it: `parley --version`, `keys list` and
// `webhooks list` against a store with a few keys, each started three times, from the build
// (dist/, as a release runs it) and through bin/parley.js; prints the median and the spread.
// With the machine idle and then with both cores busy (a CPU burner per core), since the issue was
// 12–34 s per command under load when the CLI started the whole service.
//
//   npm run build && node --import tsx bench/cli.ts
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-cli-'));
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
for (const name of ['NODE_OPTIONS', 'NODE_TEST_CONTEXT']) delete env[name];

const commands: [string, string[]][] = [
  ['--version', ['--version']],
  ['keys list', ['keys', 'list']],
  ['webhooks list', ['webhooks', 'list']],
];

function timeOnce(entry: string, args: string[]): number {
  const started = performance.now();
  execFileSync(process.execPath, [entry, ...args], { cwd: ROOT, env, stdio: 'ignore' });
  return performance.now() - started;
}

function report(label: string): void {
  for (const entry of ['dist/cli/main.js', 'bin/parley.js']) {
    for (const [name, args] of commands) {
      const runs = [0, 1, 2].map(() => timeOnce(entry, args)).sort((a, b) => a - b);
      console.log(`${label.padEnd(6)} ${entry.padEnd(17)} ${name.padEnd(14)} median ${runs[1]!.toFixed(0).padStart(5)} ms  (${runs.map((ms) => ms.toFixed(0)).join(', ')})`);
    }
  }
}

// A store with something in it: the first command creates the database and its migrations run.
for (const name of ['backend-a', 'backend-b', 'backend-c']) execFileSync(process.execPath, ['dist/cli/main.js', 'keys', 'create', '--name', name], { cwd: ROOT, env, stdio: 'ignore' });

report('idle');
const burners = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
try {
  report('busy');
} finally {
  for (const b of burners) b.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
}
