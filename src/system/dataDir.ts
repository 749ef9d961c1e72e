// DATA_DIR holds the SQLite file and the secrets a node generates for itself: checked once as a
// process starts, so that a wrong path is one line naming the setting instead of a stack trace from
// whichever module writes there first. An existing DATA_DIR open to other users (0755, as mkdir
// makes it) is closed to them (0700) when it is ours; another user's is theirs to fix: a warning.
import { accessSync, chmodSync, constants, mkdirSync, statSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import { StartupError } from './startupError.js';

/** What becomes of an existing DATA_DIR's mode: closed to others when this user owns it, else a warning when open. */
export type DataDirModeAction = 'keep' | 'tighten' | 'warn';

export function dataDirModeAction(info: Pick<Stats, 'uid' | 'mode'>, uid: number | undefined): DataDirModeAction {
  // Nothing to do where no one else may read it, or where there are no users (Windows).
  if ((info.mode & 0o077) === 0 || uid === undefined) return 'keep';
  return info.uid === uid ? 'tighten' : 'warn';
}

/**
 * Creates DATA_DIR when missing (0700), closes an existing one of ours to other users; throws a
 * StartupError when it is not a directory this process can use. `warn` is told of a DATA_DIR open
 * to others that another user owns (left as it is).
 */
export function ensureDataDir(dir: string, warn: (message: string) => void): void {
  const path = resolve(dir);
  const uid = process.getuid?.();
  const fail = (why: string) => new StartupError(`DATA_DIR=${dir}: ${path} ${why}; set DATA_DIR to a directory this user (uid ${uid ?? '?'}) can write, or fix its permissions`);
  let info: Stats | undefined;
  try {
    info = statSync(path);
    if (!info.isDirectory()) throw fail('is not a directory');
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
  if (!info) return;
  const mode = (info.mode & 0o777).toString(8).padStart(4, '0');
  const action = dataDirModeAction(info, uid);
  if (action === 'tighten') chmodSync(path, 0o700);
  if (action === 'warn') warn(`DATA_DIR=${dir}: ${path} is mode ${mode} and owned by uid ${info.uid}, not this user (uid ${uid}): left as it is; other users may list it. Make it 0700 (chmod 700 ${path}).`);
}

function describe(code: string | undefined): string {
  if (code === 'ENOTDIR') return 'a part of the path is a file';
  if (code === 'EACCES' || code === 'EPERM') return 'not permitted';
  if (code === 'EROFS') return 'a read-only file system';
  return code ?? 'unknown error';
}
