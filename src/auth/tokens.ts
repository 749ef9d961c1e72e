// Ephemeral tokens: HS256 JWTs with a kid, minted from an API key and verified on every realtime call.
import { createSigner, createVerifier } from 'fast-jwt';
import { randomUUID } from 'node:crypto';
import type { SigningKeyStore } from './signingKeys.js';

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

type Signer = (payload: object) => string;
type Verifier = (token: string) => TokenClaims;

export class TokenService {
  private readonly signers = new Map<string, Signer>();
  private readonly verifiers = new Map<string, Verifier>();

  constructor(
    private readonly keys: SigningKeyStore,
    private readonly opts: { issuer: string; audience: string; ttlSeconds: number },
  ) {}

  mint(apiKeyId: string, endUser?: string): MintedToken {
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
      exp: iat + this.opts.ttlSeconds,
      // randomUUID draws from a pooled random buffer: no system call per token.
      jti: randomUUID(),
      ...(endUser ? { end_user: endUser } : {}),
    };
    return { token: sign(claims), claims };
  }

  /** The token's claims, or null for anything not a live token of ours. Never throws. */
  async verify(token: string): Promise<TokenClaims | null> {
    const kid = readKid(token);
    if (!kid) return null;
    let verify = this.verifierFor(kid);
    if (!verify && (await this.keys.reloadIfStale())) verify = this.verifierFor(kid);
    if (!verify) return null;
    try {
      return verify(token);
    } catch {
      return null;
    }
  }

  private verifierFor(kid: string): Verifier | undefined {
    const key = this.keys.get(kid);
    if (!key) {
      this.verifiers.delete(kid);
      return undefined;
    }
    let verify = this.verifiers.get(kid);
    if (!verify) {
      verify = createVerifier({
        key: key.secret,
        algorithms: ['HS256'],
        allowedAud: this.opts.audience,
        allowedIss: this.opts.issuer,
        clockTolerance: CLOCK_SKEW_MS,
        requiredClaims: ['iss', 'aud', 'sub', 'iat', 'nbf', 'exp', 'jti'],
        // A token is presented a few times (ice-config, calls, retries): remember verified ones
        // (bounded LRU; fast-jwt still rejects an entry once its exp passes).
        cache: 10_000,
      }) as Verifier;
      this.verifiers.set(kid, verify);
    }
    return verify;
  }
}

/** The `kid` of a compact JWS header, or null when the value is not shaped like one. */
function readKid(token: string): string | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot > 1024) return null;
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')) as unknown;
    if (header && typeof header === 'object' && 'kid' in header && typeof header.kid === 'string') return header.kid;
  } catch {
    // not a JWT
  }
  return null;
}
