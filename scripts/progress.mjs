#!/usr/bin/env node
// Runs a long step of the first start (npm ci, apt-get, tsc) and says, every few seconds, how far
// it is: the time it has taken so far and, where it can be told, a count (npm packages in place out
// of package-lock.json's) or apt-get's own percentage. Plain lines on stderr, no terminal needed:
// whatever shows them (a terminal, a CI log, a file) sees something move. The step's own output
// passes through; its exit code is this script's.
//   node scripts/progress.mjs LABEL [--packages LOCKFILE [--omit-dev]] [--apt] -- COMMAND ARGS…
//     --packages  count the packages of LOCKFILE that are in node_modules (npm ci)
//     --omit-dev  ... leaving out dev dependencies (npm ci --omit=dev)
//     --apt       COMMAND is apt-get: give it APT::Status-Fd and show its percentage and action
//                 (not through sudo, which closes that descriptor: elapsed time only then)
// PROGRESS_EVERY_MS sets how often (5000 by default).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

const args = process.argv.slice(2);
const split = args.indexOf('--');
if (split < 1 || split === args.length - 1) {
  console.error('usage: node scripts/progress.mjs LABEL [--packages LOCKFILE [--omit-dev]] [--apt] -- COMMAND ARGS…');
  process.exit(2);
}
const [label, ...options] = args.slice(0, split);
let [command, ...commandArgs] = args.slice(split + 1);
const everyMs = Number(process.env.PROGRESS_EVERY_MS) > 0 ? Number(process.env.PROGRESS_EVERY_MS) : 5000;
const started = Date.now();
const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`;

/** Whether a package's os or cpu list (["linux"], ["!win32"]) lets it be installed here. */
function fits(list, value) {
  if (!Array.isArray(list) || list.length === 0) return true;
  const allowed = list.filter((v) => !v.startsWith('!'));
  return !list.includes(`!${value}`) && (allowed.length === 0 || allowed.includes(value));
}

/** This system's C library, as the lock's libc lists name it (Linux only; elsewhere the lists are absent). */
const libc = process.platform === 'linux' && !process.report.getReport().header.glibcVersionRuntime ? 'musl' : 'glibc';

/**
 * The packages npm ci will put in place: package-lock.json's node_modules/… entries, less those for
 * another platform or C library (optional native builds) and, with --omit-dev, the dev ones.
 */
function lockedPackages(lockfile, omitDev) {
  const { packages = {} } = JSON.parse(readFileSync(lockfile, 'utf8'));
  const root = dirname(lockfile);
  return Object.entries(packages)
    .filter(([path, info]) => path.startsWith('node_modules/') && !info.link && !(omitDev && info.dev))
    .filter(([, info]) => fits(info.os, process.platform) && fits(info.cpu, process.arch) && fits(info.libc, libc))
    .map(([path]) => join(root, path, 'package.json'));
}

const lockIndex = options.indexOf('--packages');
const packages = lockIndex >= 0 ? lockedPackages(options[lockIndex + 1], options.includes('--omit-dev')) : undefined;
// Only when apt-get is the command itself: sudo closes the descriptors past stderr, and apt-get
// would then write its status into whatever file it opened under that number.
const apt = options.includes('--apt') && /(^|\/)apt-get$/.test(command);
/** apt-get's latest status line: its percentage and what it is doing. */
let aptStatus = '';
if (apt) commandArgs = ['-o', 'APT::Status-Fd=3', ...commandArgs];

function report() {
  const parts = [];
  if (packages) {
    const inPlace = packages.filter((p) => existsSync(p)).length;
    parts.push(`${inPlace} of ${packages.length} packages in place${inPlace === packages.length ? ' (their install scripts running)' : ''}`);
  }
  if (apt && aptStatus) parts.push(aptStatus);
  parts.push(elapsed());
  console.error(`${label}: ${parts.join(', ')}`);
}

const child = spawn(command, commandArgs, { stdio: ['inherit', 'inherit', 'inherit', ...(apt ? ['pipe'] : [])] });
if (apt) {
  // dlstatus:1:9.0909:Retrieving file 1 of 11 / pmstatus:coturn:45.4545:Unpacking coturn
  createInterface({ input: child.stdio[3] }).on('line', (line) => {
    const [kind, , percent, ...what] = line.split(':');
    if (kind === 'dlstatus' || kind === 'pmstatus') aptStatus = `${Math.floor(Number(percent))}% ${kind === 'dlstatus' ? 'downloaded' : 'installed'} (${what.join(':').trim()})`;
  });
}
const timer = setInterval(report, everyMs);
child.on('error', (err) => {
  clearInterval(timer);
  console.error(`${label}: could not run ${command}: ${err.message}`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  clearInterval(timer);
  const counted = packages ? `, ${packages.filter((p) => existsSync(p)).length} of ${packages.length} packages in place` : '';
  if (code === 0) console.error(`${label}: done in ${elapsed()}${counted}`);
  else console.error(`${label}: failed (${signal ?? `exit code ${code}`}) after ${elapsed()}`);
  process.exit(code ?? 1);
});
