// Processes as Linux shows them in /proc, for tests and benchmarks that look at a server's children.
import { readFileSync, readdirSync } from 'node:fs';

/** The direct children of `pid` (empty once it is gone). */
export function childPids(pid: number): number[] {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tids.flatMap((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
    } catch {
      return []; // the thread ended
    }
  });
}
