// A start that cannot go on for a reason the operator can fix (a port in use, an address this machine
// does not have): said in one line naming the setting, without a stack trace.
export class StartupError extends Error {}

/** The StartupError for a listen or bind that failed, or the error itself when it is not one of those. */
export function bindFailure(err: unknown, what: string, host: string, port: number, setting: string, hint = ''): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE') return new StartupError(`${what} cannot listen on ${where}: the port is in use${hint}; change ${setting}, or stop what holds it`);
  if (code === 'EACCES') return new StartupError(`${what} cannot listen on ${where}: not permitted (ports below 1024 need privileges); change ${setting}`);
  if (code === 'EADDRNOTAVAIL') return new StartupError(`${what} cannot listen on ${where}: ${host} is not an address of this machine; set the address`);
  return err instanceof Error ? err : new Error(String(err));
}
