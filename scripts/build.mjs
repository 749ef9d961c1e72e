#!/usr/bin/env node
// Compiles src/ to dist/ (TypeScript through tsc, then the files that are not TypeScript: the demo
// page's and the console's static files). Plain JavaScript so that it runs without tsx.
//   node scripts/build.mjs             a clean build (dist/ removed first)
//   node scripts/build.mjs --if-stale  only when dist/ is missing or older than the sources, so that
//                                      `npm start` costs nothing when nothing changed, and works in a
//                                      production install (no TypeScript) that ships a built dist/
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
/** Written last: its time is when the build finished, and it exists only after one that did. */
const STAMP = join(dist, '.built');
/** Files under src that are not compiled but loaded at run time, copied as they are. */
const ASSETS = ['http/demo/public', 'http/console/public'];

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

function isStale() {
  if (!existsSync(STAMP)) return true;
  // A release (scripts/build-release.sh) ships dist/ without the sources it was compiled from.
  if (!existsSync(join(root, 'src'))) return false;
  const sources = Math.max(
    newestMtime(join(root, 'src')),
    ...['tsconfig.json', 'tsconfig.build.json'].map((f) => statSync(join(root, f)).mtimeMs),
  );
  return sources > statSync(STAMP).mtimeMs;
}

if (process.argv.includes('--if-stale') && !isStale()) process.exit(0);

let tsc;
try {
  tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  console.error('build: TypeScript is not installed (a dev dependency): run `npm ci` before `npm run build`, or ship a dist/ built elsewhere');
  process.exit(1);
}

// The first `npm start` waits on this: say what it is, and (scripts/progress.mjs) how long it has taken so far.
console.error('build: compiling src/ to dist/ with tsc (`npm start` repeats it only when src/ changes)');
rmSync(dist, { recursive: true, force: true });
const progress = join(root, 'scripts/progress.mjs');
const result = spawnSync(process.execPath, [progress, 'build: tsc', '--', process.execPath, tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);
for (const asset of ASSETS) cpSync(join(root, 'src', asset), join(dist, asset), { recursive: true });
writeFileSync(STAMP, `${new Date().toISOString()}\n`);
