// The console's login and its session cookie. The password is ADMIN_TOKEN, compared in constant
// time; a session is a signed, expiring value (any node with the same ADMIN_TOKEN accepts it),
// signed with a key derived from the token: a new token ends every session. A logout ends one: its
// id is kept in the store until it expires (storage/consoleLogouts.ts).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'parley_console';
/** The cookie is sent to the console's paths only. */
export const COOKIE_PATH = '/console';
/** How long a login lasts. */
export const SESSION_TTL_SECONDS = 8 * 60 * 60;

export interface ConsoleSession {
  id: string;
  /** Unix seconds. */
  expiresAt: number;
}

const digest = (key: Buffer | string, text: string): Buffer => createHmac('sha256', key).update(text).digest();

export class ConsoleSessions {
  private readonly signingKey: Buffer;
  /** The token's own digest: comparing digests keeps the comparison constant-time whatever the length presented. */
  private readonly tokenDigest: Buffer;

  constructor(adminToken: string) {
    this.signingKey = digest(adminToken, 'parley console session');
    this.tokenDigest = digest(this.signingKey, adminToken);
  }

  /** Whether `presented` is the admin token. */
  isAdminToken(presented: string): boolean {
    return timingSafeEqual(digest(this.signingKey, presented), this.tokenDigest);
  }

  /** A new session's cookie value: `<expiry (unix s)>.<nonce>.<signature>`. */
  issue(now = Date.now()): string {
    const body = `${Math.floor(now / 1000) + SESSION_TTL_SECONDS}.${randomBytes(12).toString('base64url')}`;
    return `${body}.${this.sign(body)}`;
  }

  /**
   * The session of a cookie value this key signed and that has not expired: its id (the nonce) and
   * expiry (unix s); undefined for any other value. Whether it was logged out is the store's to say.
   */
  sessionOf(value: string | undefined, now = Date.now()): ConsoleSession | undefined {
    if (!value) return undefined;
    const m = /^(\d{1,12})\.([\w-]{16})\.([\w-]{43})$/.exec(value);
    if (!m) return undefined;
    const expected = Buffer.from(this.sign(`${m[1]}.${m[2]}`));
    if (!timingSafeEqual(Buffer.from(m[3]!), expected)) return undefined;
    const expiresAt = Number(m[1]);
    return expiresAt * 1000 > now ? { id: m[2]!, expiresAt } : undefined;
  }

  private sign(body: string): string {
    return digest(this.signingKey, body).toString('base64url');
  }
}

/** One cookie's value from a Cookie header (undefined when absent). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie header of the session cookie (`value` empty: one that clears it). */
export function sessionCookie(value: string, secure: boolean): string {
  const maxAge = value ? SESSION_TTL_SECONDS : 0;
  return `${SESSION_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
