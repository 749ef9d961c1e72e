// SIP digest authentication (RFC 2617 / RFC 7616 with MD5, what trunks and phones speak): the
// challenge we send and the check of a caller's answer. Nonces carry their own time and an HMAC,
// so no state is kept per challenge; they are good for NONCE_TTL_MS.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const NONCE_TTL_MS = 5 * 60_000;

export const REALM = 'parley';

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

export class DigestAuth {
  /** Per process: a restart only means callers are challenged again. */
  private readonly secret = randomBytes(32);

  constructor(private readonly users: Map<string, string>) {}

  get enabled(): boolean {
    return this.users.size > 0;
  }

  /** The WWW-Authenticate header of a 401. */
  challenge(now = Date.now()): string {
    return `Digest realm="${REALM}", nonce="${this.nonce(now)}", algorithm=MD5, qop="auth"`;
  }

  /** Whether `authorization` (the caller's Authorization header) answers one of our challenges for `method`. */
  verify(authorization: string | undefined, method: string, now = Date.now()): boolean {
    if (!authorization || !/^Digest\s/i.test(authorization)) return false;
    const p = readParams(authorization.slice(7));
    const password = p.username === undefined ? undefined : this.users.get(p.username);
    if (password === undefined || !p.nonce || !p.uri || !p.response || p.realm !== REALM) return false;
    if (p.algorithm && p.algorithm.toUpperCase() !== 'MD5') return false;
    if (!this.nonceValid(p.nonce, now)) return false;
    const ha1 = md5(`${p.username}:${REALM}:${password}`);
    const ha2 = md5(`${method}:${p.uri}`);
    let expected: string;
    if (p.qop === 'auth') {
      if (!p.nc || !p.cnonce) return false;
      expected = md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
    } else if (p.qop === undefined) {
      expected = md5(`${ha1}:${p.nonce}:${ha2}`);
    } else return false;
    const given = Buffer.from(p.response.toLowerCase());
    return given.length === expected.length && timingSafeEqual(given, Buffer.from(expected));
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
