// The programs this machine has: Parley runs a few Debian tools (flite, espeak-ng, coturn, setpriv).
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether `cmd` is an executable on PATH. */
export function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
