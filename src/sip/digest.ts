// SIP digest authentication (RFC 2617 / RFC 7616 with MD5, what trunks and phones speak): the
// challenge we send and the check of a caller's answer; and our own answer to a provider's
// challenge when we register with it (digestAnswer). Nonces carry their own time and an HMAC,
// so no state is kept per challenge; they are good for NONCE_TTL_MS.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const NONCE_TTL_MS = 5 * 60_000;

export const REALM = 'parley';

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** A caller's answer to our challenge, when it names one of our users and one of our nonces. */
export type DigestAnswer = { user: string; passwordRight: boolean } | undefined;

/**
 * Where the primary of PARLEY_WORKERS hands its workers one nonce key (hex): a phone's digest answer
 * to one worker's challenge is good on the other (its next call's Call-ID may pick either).
 */
export const NONCE_SECRET_ENV = 'PARLEY_SIP_NONCE_SECRET';

export class DigestAuth {
  /** The key our nonces are signed with: the workers' shared one, else this process's (a restart only means callers are challenged again). */
  private readonly secret: Buffer;

  constructor(
    private readonly users: Map<string, string>,
    secretHex = process.env[NONCE_SECRET_ENV],
  ) {
    this.secret = secretHex && /^[0-9a-f]{64}$/.test(secretHex) ? Buffer.from(secretHex, 'hex') : randomBytes(32);
  }

  get enabled(): boolean {
    return this.users.size > 0;
  }

  /** The WWW-Authenticate header of a 401. */
  challenge(now = Date.now()): string {
    return `Digest realm="${REALM}", nonce="${this.nonce(now)}", algorithm=MD5, qop="auth"`;
  }

  /**
   * What `authorization` (the caller's Authorization header) proves for `method`: nothing (none,
   * malformed, an unknown user, an expired or forged nonce), or whether `user`'s password was right.
   */
  check(authorization: string | undefined, method: string, now = Date.now()): DigestAnswer {
    if (!authorization || !/^Digest\s/i.test(authorization)) return undefined;
    const p = readParams(authorization.slice(7));
    const user = p.username;
    const password = user === undefined ? undefined : this.users.get(user);
    if (user === undefined || password === undefined || !p.nonce || !p.uri || !p.response || p.realm !== REALM) return undefined;
    if (p.algorithm && p.algorithm.toUpperCase() !== 'MD5') return undefined;
    if (!this.nonceValid(p.nonce, now)) return undefined;
    const ha1 = md5(`${user}:${REALM}:${password}`);
    const ha2 = md5(`${method}:${p.uri}`);
    let expected: string;
    if (p.qop === 'auth') {
      if (!p.nc || !p.cnonce) return undefined;
      expected = md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
    } else if (p.qop === undefined) {
      expected = md5(`${ha1}:${p.nonce}:${ha2}`);
    } else return undefined;
    const given = Buffer.from(p.response.toLowerCase());
    return { user, passwordRight: given.length === expected.length && timingSafeEqual(given, Buffer.from(expected)) };
  }

  private nonce(now: number): string {
    const time = now.toString(36);
    return `${time}.${createHmac('sha256', this.secret).update(time).digest('base64url').slice(0, 22)}`;
  }

  private nonceValid(nonce: string, now: number): boolean {
    const [time] = nonce.split('.');
    if (!time || !/^[0-9a-z]{1,12}$/.test(time)) return false;
    const issued = parseInt(time, 36);
    return now - issued >= 0 && now - issued <= NONCE_TTL_MS && this.nonce(issued) === nonce;
  }
}

/** `name="value", name=value` pairs of a digest header. */
function readParams(text: string): Record<string, string | undefined> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) out[m[1]!.toLowerCase()] = m[2] ?? m[3] ?? '';
  return out;
}

/**
 * The Authorization header answering `challenge` (a WWW-Authenticate or Proxy-Authenticate value)
 * for `method` on `uri` as `user`; undefined for a challenge we cannot answer (not MD5 digest).
 */
export function digestAnswer(challenge: string, method: string, uri: string, user: string, password: string, cnonce = randomBytes(8).toString('hex')): string | undefined {
  if (!/^Digest\s/i.test(challenge)) return undefined;
  const p = readParams(challenge.slice(7));
  if (!p.nonce || p.realm === undefined) return undefined;
  if (p.algorithm && p.algorithm.toUpperCase() !== 'MD5') return undefined;
  const qops = (p.qop ?? '').split(',').map((q) => q.trim().toLowerCase());
  const ha1 = md5(`${user}:${p.realm}:${password}`);
  const ha2 = md5(`${method}:${uri}`);
  const nc = '00000001';
  const auth = qops.includes('auth');
  const response = auth ? md5(`${ha1}:${p.nonce}:${nc}:${cnonce}:auth:${ha2}`) : md5(`${ha1}:${p.nonce}:${ha2}`);
  const quoted = (v: string) => `"${v.replace(/["\\]/g, '\\$&')}"`;
  return [
    `Digest username=${quoted(user)}`,
    `realm=${quoted(p.realm)}`,
    `nonce=${quoted(p.nonce)}`,
    `uri=${quoted(uri)}`,
    `response="${response}"`,
    'algorithm=MD5',
    ...(auth ? [`qop=auth`, `nc=${nc}`, `cnonce="${cnonce}"`] : []),
    ...(p.opaque !== undefined ? [`opaque=${quoted(p.opaque)}`] : []),
  ].join(', ');
}
