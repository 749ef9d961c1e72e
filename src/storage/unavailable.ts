// "The store cannot answer now" as one error type, whatever the store (PostgreSQL, SQLite, Redis):
// callers serve from memory or answer 503 with Retry-After; anything else stays a bug.

export type StoreName = 'database' | 'redis';

export class StoreUnavailable extends Error {
  constructor(
    readonly store: StoreName,
    override readonly cause: unknown,
  ) {
    super(`${store} unavailable: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

/** Socket-level failures: the server is down, restarting or unreachable. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * PostgreSQL SQLSTATEs of a server that cannot serve now: connection exceptions (08), shutdown or
 * start-up (57P01-57P03), a statement cancelled by its timeout (57014), exhausted resources such as
 * disk or connections (53), system errors (58).
 */
const PG_UNAVAILABLE = /^(08|53|58|57P0[123]|57014)/;

/** node-postgres' own errors for a connection that died or never came. */
const PG_CONNECTION_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|not queryable|Query read timeout|connection timeout/i;

/**
 * SQLite result codes of a file that cannot be used now (locked, full, unreadable, read-only,
 * damaged); constraint and syntax errors are not among them.
 */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOMEM|CORRUPT|NOTADB|PROTOCOL|PERM|AUTH)/;

/** ioredis: the connection is down and the command was given up on, or it did not answer in time (commandTimeout). */
const REDIS_MESSAGES = /Connection is closed|MaxRetriesPerRequest|Stream isn't writeable|enableOfflineQueue|Reached the max retries|Command timed out/i;

/** Whether `err` means the database cannot answer now (as opposed to a query that is wrong). */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || SQLITE_UNAVAILABLE.test(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return PG_UNAVAILABLE.test(code);
  }
  return PG_CONNECTION_MESSAGES.test(err.message);
}

export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (typeof code === 'string' && NETWORK_CODES.has(code)) || REDIS_MESSAGES.test(err.message);
}
