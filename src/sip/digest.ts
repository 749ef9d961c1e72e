// SIP digest authentication (RFC 2617 / RFC 7616 with MD5, what trunks and phones speak): the
// challenge we send and the check of a caller's answer; and our own answer to a provider's
// challenge when we register with it (digestAnswer).
//
// An answer is good once, for the request it was challenged for, from where that came (as
// Kamailio's auth with one-time nonces and auth_checks, and Asterisk's short nonce lifetime): a
// nonce carries its time and two HMACs, one of the source address, one of that and the request
// (Call-ID, Request-URI) and of this process. A nonce admits one request, within NONCE_TTL_MS; an
// answer to one of our nonces for this address that is used, old, or another request's (a phone
// refreshing its registration with its last nonce, linphone's way) says `stale`, and the caller
// is challenged again with `stale=true` (when its password was right: RFC 7616 §3.3), so a real
// phone goes on without asking its user. An answer replayed from another address proves nothing:
// it is challenged as if it had none. No state is kept per challenge; used nonces are remembered
// until they expire.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** How long a nonce admits a request after it was sent (a phone answers at once). */
export const NONCE_TTL_MS = 30_000;

/** Used nonces remembered at most: past this the oldest are forgotten, and nonces issued before them count as used. */
const MAX_USED_NONCES = 100_000;

export const REALM = 'parley';

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** What a nonce is bound to: where the request came from, and which request it is. */
export interface DigestRequest {
  method: string;
  /** The source address. */
  source: string;
  callId: string;
  /** The Request-URI. */
  uri: string;
}

/**
 * A caller's answer to one of our nonces for its address: the user it names (known or not:
 * an unknown user's answer is a wrong password, so that names cannot be told apart), whether the
 * password was right, and whether the nonce is stale (used, expired, or another request's): then
 * it admits nothing, and a right password is challenged again with `stale=true`.
 */
export type DigestAnswer = { user: string; passwordRight: boolean; stale: boolean } | undefined;

/**
 * Where the primary of PARLEY_WORKERS hands its workers one nonce key (hex): an answer to one
 * worker's nonce reaching another (a phone's next request with another Call-ID) is known there for
 * stale, not taken for a forgery.
 */
export const NONCE_SECRET_ENV = 'PARLEY_SIP_NONCE_SECRET';

export class DigestAuth {
  /** The key our nonces are signed with: the workers' shared one, else this process's (a restart only means callers are challenged again). */
  private readonly secret: Buffer;
  /** This process: a nonce admits requests only in the process that issued it, where its use is remembered. */
  private readonly instance = randomBytes(8).toString('hex');
  /** Used nonces (in the order they were used) and when each was issued. */
  private readonly used = new Map<string, number>();
  /** Nonces issued at or before this count as used (their records were forgotten to stay bounded). */
  private forgottenUpTo = -1;
  /** A password no user has, checked for unknown users (their answers take as long as known users'). */
  private readonly nobody = randomBytes(16).toString('hex');

  constructor(
    private readonly users: Map<string, string>,
    secretHex = process.env[NONCE_SECRET_ENV],
  ) {
    this.secret = secretHex && /^[0-9a-f]{64}$/.test(secretHex) ? Buffer.from(secretHex, 'hex') : randomBytes(32);
  }

  get enabled(): boolean {
    return this.users.size > 0;
  }

  /** The WWW-Authenticate header of a 401 to `req`; `stale`: its answer was right but its nonce stale. */
  challenge(req: Omit<DigestRequest, 'method'>, stale = false, now = Date.now()): string {
    const time = now.toString(36);
    const salt = randomBytes(6).toString('base64url');
    const nonce = `${time}.${salt}.${this.sourceMac(time, salt, req.source)}.${this.requestMac(time, salt, req)}`;
    return `Digest realm="${REALM}", nonce="${nonce}", algorithm=MD5, qop="auth"${stale ? ', stale=true' : ''}`;
  }

  /**
   * What `authorization` (the request's Authorization header) proves: nothing (none, malformed, or
   * a nonce that is not ours for this address), or an answer (DigestAnswer). A fresh nonce answered
   * with the right password is used up by this check.
   */
  check(authorization: string | undefined, req: DigestRequest, now = Date.now()): DigestAnswer {
    if (!authorization || !/^Digest\s/i.test(authorization)) return undefined;
    const p = readParams(authorization.slice(7));
    const user = p.username;
    if (user === undefined || !p.nonce || !p.uri || !p.response || p.realm !== REALM) return undefined;
    if (p.algorithm && p.algorithm.toUpperCase() !== 'MD5') return undefined;
    const [time, salt, sourceMac, requestMac, extra] = p.nonce.split('.');
    if (!time || !salt || !sourceMac || !requestMac || extra !== undefined || !/^[0-9a-z]{1,12}$/.test(time)) return undefined;
    if (!same(sourceMac, this.sourceMac(time, salt, req.source))) return undefined;
    const password = this.users.get(user);
    const ha1 = md5(`${user}:${REALM}:${password ?? this.nobody}`);
    const ha2 = md5(`${req.method}:${p.uri}`);
    let expected: string;
    if (p.qop === 'auth') {
      if (!p.nc || !p.cnonce) return undefined;
      expected = md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
    } else if (p.qop === undefined) {
      expected = md5(`${ha1}:${p.nonce}:${ha2}`);
    } else return undefined;
    const matches = same(p.response.toLowerCase(), expected);
    const passwordRight = password !== undefined && matches;
    const issued = parseInt(time, 36);
    this.forgetExpired(now);
    const fresh = now - issued >= 0 && now - issued <= NONCE_TTL_MS && issued > this.forgottenUpTo && !this.used.has(p.nonce) && same(requestMac, this.requestMac(time, salt, req));
    if (fresh && passwordRight) this.use(p.nonce, issued);
    return { user, passwordRight, stale: !fresh };
  }

  private sourceMac(time: string, salt: string, source: string): string {
    return this.mac(`source\n${time}\n${salt}\n${source}`, 16);
  }

  private requestMac(time: string, salt: string, req: Omit<DigestRequest, 'method'>): string {
    return this.mac(`request\n${time}\n${salt}\n${req.source}\n${req.callId}\n${req.uri}\n${this.instance}`, 22);
  }

  private mac(text: string, length: number): string {
    return createHmac('sha256', this.secret).update(text).digest('base64url').slice(0, length);
  }

  private use(nonce: string, issued: number): void {
    this.used.set(nonce, issued);
    for (const [oldest, at] of this.used) {
      if (this.used.size <= MAX_USED_NONCES) break;
      this.used.delete(oldest);
      this.forgottenUpTo = Math.max(this.forgottenUpTo, at);
    }
  }

  /** Drops the records of nonces that have expired (used in about the order they were issued: the oldest come first). */
  private forgetExpired(now: number): void {
    for (const [nonce, issued] of this.used) {
      if (now - issued <= NONCE_TTL_MS) break;
      this.used.delete(nonce);
    }
  }
}

/** Whether two ASCII strings are equal, in a time that does not tell how much of them is. */
function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
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
