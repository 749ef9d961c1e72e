// DATA_DIR holds the SQLite file and the secrets a node generates for itself: checked once as a
// process starts, so that a wrong path is one line naming the setting instead of a stack trace from
// whichever module writes there first.
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { StartupError } from './startupError.js';

/** Creates DATA_DIR when missing; throws a StartupError when it is not a directory this process can use. */
export function ensureDataDir(dir: string): void {
  const path = resolve(dir);
  const fail = (why: string) =>
    new StartupError(`DATA_DIR=${dir}: ${path} ${why}; set DATA_DIR to a directory this user (uid ${process.getuid?.() ?? '?'}) can write, or fix its permissions`);
  try {
    if (!statSync(path).isDirectory()) throw fail('is not a directory');
  } catch (err) {
    if (err instanceof StartupError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw fail(`cannot be read (${describe(code)})`);
    try {
      mkdirSync(path, { recursive: true, mode: 0o700 });
    } catch (mkdirErr) {
      throw fail(`cannot be created (${describe((mkdirErr as NodeJS.ErrnoException).code)})`);
    }
  }
  try {
    accessSync(path, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch {
    throw fail('is not readable and writable by this process');
  }
}

function describe(code: string | undefined): string {
  if (code === 'ENOTDIR') return 'a part of the path is a file';
  if (code === 'EACCES' || code === 'EPERM') return 'not permitted';
  if (code === 'EROFS') return 'a read-only file system';
  return code ?? 'unknown error';
}
