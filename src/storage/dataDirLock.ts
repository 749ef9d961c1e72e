// One server per DATA_DIR. A second `parley serve` on a folder in use would run its own coturn over
// the first's files (killing the first's coturn as a leftover) and share its node id: it stops
// instead, before it touches anything in the folder. The lock is the kernel's (a POSIX record lock,
// taken through SQLite on DATA_DIR/server.lock): it ends with the process, however the process ends,
// so no crash leaves a stale lock behind. The CLI's commands take no lock: they run beside a server.
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StartupError } from '../system/startupError.js';
import { SQLite, type SQLiteDatabase } from './sqliteDriver.js';

export const LOCK_FILE = 'server.lock';

/** Held for the life of the process (a closed or collected handle would let the lock go). */
let held: SQLiteDatabase | undefined;

/** Takes DATA_DIR's lock, or throws a StartupError naming the server that holds it. */
export function lockDataDir(dir: string): void {
  if (held) return;
  const file = join(dir, LOCK_FILE);
  closeSync(openSync(file, 'a', 0o600));
  // No wait: a held lock is a server running, not a moment's contention.
  const db = new SQLite(file, { timeout: 0 });
  try {
    // The journal in memory: nothing but the empty lock file is ever written.
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    db.close();
    if ((err as { code?: unknown }).code !== 'SQLITE_BUSY') throw err;
    const pid = lockHolder(file);
    throw new StartupError(
      `DATA_DIR=${dir}: ${resolve(dir)} is in use by another Parley server${pid ? ` (pid ${pid})` : ''}; stop that one first, or give this one a DATA_DIR of its own`,
    );
  }
  held = db;
}

/** The process holding a lock on `file`, from /proc/locks (Linux); undefined where it cannot be told. */
function lockHolder(file: string): number | undefined {
  try {
    const inode = statSync(file).ino;
    const line = readFileSync('/proc/locks', 'utf8')
      .split('\n')
      .find((l) => l.split(/\s+/)[5]?.endsWith(`:${inode}`));
    const pid = Number(line?.split(/\s+/)[4]);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
