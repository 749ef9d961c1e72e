// Ephemeral tokens: HS256 JWTs with a kid, minted from an API key and verified on every realtime call.
import { createSigner, createVerifier } from 'fast-jwt';
import { randomUUID } from 'node:crypto';
import type { SigningKey, SigningKeyStore } from './signingKeys.js';

export interface TokenClaims {
  iss: string;
  aud: string;
  /** The API key id (never the key). */
  sub: string;
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
  /** End user named by the backend (`?email=`), when given. */
  end_user?: string;
}

export interface MintedToken {
  token: string;
  claims: TokenClaims;
}

const CLOCK_SKEW_MS = 5000;
const VERIFIED_CACHE_SIZE = 10_000;

type Signer = (payload: object) => string;
type Verifier = (token: string) => TokenClaims;

export class TokenService {
  private readonly signers = new Map<string, Signer>();
  private readonly verifiers = new Map<string, Verifier>();
  private readonly kidByHeader = new Map<string, string | null>();
  /**
   * Verified tokens by their text: a token is presented a few times (ice-config, calls, retries).
   * Our own rather than fast-jwt's cache, whose default key is a SHA-256 of the token (about the cost
   * of verifying it again) and which warns at start when keyed by the token itself. Each entry holds
   * the key that verified it: once that key is gone from the store (deleted, or reloaded anew), the
   * entry no longer counts.
   */
  private readonly verified = new Map<string, { claims: TokenClaims; key: SigningKey }>();

  constructor(
    private readonly keys: SigningKeyStore,
    private readonly opts: { issuer: string; audience: string; ttlSeconds: number },
  ) {}

  /** A token for the key; `ttlSeconds` overrides the configured lifetime (OpenAI's expires_after). */
  mint(apiKeyId: string, endUser?: string, ttlSeconds = this.opts.ttlSeconds): MintedToken {
    const key = this.keys.activeKey;
    let sign = this.signers.get(key.kid);
    if (!sign) {
      sign = createSigner({ key: key.secret, algorithm: 'HS256', kid: key.kid }) as Signer;
      this.signers.set(key.kid, sign);
    }
    const iat = Math.floor(Date.now() / 1000);
    const claims: TokenClaims = {
      iss: this.opts.issuer,
      aud: this.opts.audience,
      sub: apiKeyId,
      iat,
      nbf: iat,
      exp: iat + ttlSeconds,
      // randomUUID draws from a pooled random buffer: no system call per token.
      jti: randomUUID(),
      ...(endUser ? { end_user: endUser } : {}),
    };
    return { token: sign(claims), claims };
  }

  /** The token's claims, or null for anything not a live token of ours; rejects only with StoreUnavailable. */
  async verify(token: string): Promise<TokenClaims | null> {
    const known = this.verifyWithLoadedKeys(token);
    if (known !== undefined) return known;
    // Signed with a secret this node has not loaded yet (another node or the CLI rotated): look again.
    return (await this.keys.reloadIfStale()) ? (this.verifyWithLoadedKeys(token) ?? null) : null;
  }

  /**
   * `verify` without waiting: the claims, null, or undefined when the token names a signing key this
   * node has not loaded (only `verify` may reload the keys).
   */
  verifyWithLoadedKeys(token: string): TokenClaims | null | undefined {
    const hit = this.verified.get(token);
    if (hit) {
      if (Date.now() <= hit.claims.exp * 1000 + CLOCK_SKEW_MS && this.keys.get(hit.key.kid) === hit.key) return hit.claims;
      this.verified.delete(token);
    }
    const kid = this.readKid(token);
    if (!kid) return null;
    const key = this.keys.get(kid);
    if (!key) {
      this.verifiers.delete(kid);
      return undefined;
    }
    const verify = this.verifierFor(key);
    let claims: TokenClaims;
    try {
      claims = verify(token);
    } catch {
      return null;
    }
    // Bounded: the oldest entry makes room (a Map iterates in insertion order).
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, { claims, key });
    return claims;
  }

  /** The `kid` of a compact JWS header, or null; remembered per header (there are few distinct ones). */
  private readKid(token: string): string | null {
    const dot = token.indexOf('.');
    if (dot <= 0 || dot > 1024) return null;
    const header = token.slice(0, dot);
    let kid = this.kidByHeader.get(header);
    if (kid === undefined) {
      kid = kidOfHeader(header);
      if (this.kidByHeader.size >= 256) this.kidByHeader.clear();
      this.kidByHeader.set(header, kid);
    }
    return kid;
  }

  private verifierFor(key: SigningKey): Verifier {
    const { kid } = key;
    let verify = this.verifiers.get(kid);
    if (!verify) {
      verify = createVerifier({
        key: key.secret,
        algorithms: ['HS256'],
        allowedAud: this.opts.audience,
        allowedIss: this.opts.issuer,
        clockTolerance: CLOCK_SKEW_MS,
        requiredClaims: ['iss', 'aud', 'sub', 'iat', 'nbf', 'exp', 'jti'],
      }) as Verifier;
      this.verifiers.set(kid, verify);
    }
    return verify;
  }
}

/** The `kid` of a base64url JWS header, or null when the value is not shaped like one. */
function kidOfHeader(encoded: string): string | null {
  try {
    const header = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as unknown;
    if (header && typeof header === 'object' && 'kid' in header && typeof header.kid === 'string') return header.kid;
  } catch {
    // not a JWT
  }
  return null;
}
