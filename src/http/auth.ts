// Bearer authentication for the two credential kinds: the permanent API key and the ephemeral token.
// The hooks are callback-style and answer synchronously from the node's caches (the common case);
// only a cache miss waits for the store.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { TokenClaims } from '../auth/tokens.js';
import { looksLikeApiKey } from '../config/apiKeyFormat.js';
import type { Services } from '../services.js';
import { HttpError, MESSAGES, nestedApiKeyError, shapeA } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    apiKeyId?: string;
    token?: TokenClaims;
  }
}

type Hook = (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** The hooks below that look an API key up (in the key cache, else the store). */
const apiKeyLookups = new WeakSet<Hook>();
const looksUp = (hook: Hook): Hook => (apiKeyLookups.add(hook), hook);

/**
 * Whether a route's onRequest hooks look an API key up: such a route counts in the per-address
 * key-lookup limit (src/http/rateLimits.ts), so made-up keys cannot flood the key cache or the store.
 */
export function looksUpApiKey(onRequest: unknown): boolean {
  return [onRequest].flat().some((hook) => typeof hook === 'function' && apiKeyLookups.has(hook as Hook));
}

/** The credential of `Authorization: Bearer <credential>` (scheme case-insensitive, RFC 6750), or null. */
export function bearerCredential(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

/** OpenAI's answer to a missing or wrong API key (its routes). */
export const openAiKeyError = () =>
  new HttpError(401, { error: { message: 'Incorrect API key provided or the API key is inactive.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });

/** client-secrets: a live API key, else 401 with the nested error object (or `refuse`'s error). */
export function requireApiKey(services: Services, refuse: () => HttpError = () => new HttpError(401, nestedApiKeyError())): Hook {
  return looksUp((req, _reply, done) => {
    const credential = bearerCredential(req.headers.authorization);
    if (!credential || !looksLikeApiKey(credential)) return done(refuse());
    withApiKey(services, credential, (id) => {
      if (!id) return done(refuse());
      req.apiKeyId = id;
      done();
    }, done);
  });
}

/** ice-config and calls: no bearer credential is 403; anything but a live token of ours is 401. */
export function requireToken(services: Services): Hook {
  return (req, _reply, done) => {
    const credential = bearerCredential(req.headers.authorization);
    if (!credential) return done(new HttpError(403, shapeA(MESSAGES.notAuthenticated)));
    withToken(services, credential, (claims) => {
      if (!claims) return done(new HttpError(401, shapeA(MESSAGES.invalidToken)));
      req.token = claims;
      req.apiKeyId = claims.sub;
      done();
    }, done);
  };
}

/** Catalogue reads: either a live token or a live API key. */
export function requireTokenOrApiKey(services: Services): Hook {
  const apiKey = requireApiKey(services);
  const token = requireToken(services);
  return looksUp((req, reply, done) => {
    const credential = bearerCredential(req.headers.authorization);
    return credential && looksLikeApiKey(credential) ? apiKey(req, reply, done) : token(req, reply, done);
  });
}

/** Calls `then` with the key's id (null: not a live key), synchronously when the cache knows it. */
function withApiKey(services: Services, key: string, then: (id: string | null) => void, fail: (err: Error) => void): void {
  const cached = services.keyCache.cachedKeyId(key);
  if (cached !== undefined) return then(cached);
  services.keyCache.authenticate(key).then(then, fail);
}

/** The prefix OpenAI's browser clients require of a client secret; the token follows it. */
export const CLIENT_SECRET_PREFIX = 'ek_';

/** Calls `then` with the claims of a live token of ours (null otherwise), synchronously when it can. */
function withToken(services: Services, credential: string, then: (claims: TokenClaims | null) => void, fail: (err: Error) => void): void {
  // Both forms work everywhere: the token as client-secrets issues it, and as client_secrets does.
  const token = credential.startsWith(CLIENT_SECRET_PREFIX) ? credential.slice(CLIENT_SECRET_PREFIX.length) : credential;
  const claims = services.tokens.verifyWithLoadedKeys(token);
  if (claims === null) return then(null);
  // A revoked key's tokens die with it.
  const active = claims && services.keyCache.cachedIsActive(claims.sub);
  if (claims && active !== undefined) return then(active ? claims : null);
  void (async () => {
    const verified = claims ?? (await services.tokens.verify(token));
    return verified && (await services.keyCache.isActive(verified.sub)) ? verified : null;
  })().then(then, fail);
}

/** The id of a live API key (null: not one), for routes that authenticate outside a hook. */
export function verifyApiKey(services: Services, key: string): Promise<string | null> {
  return new Promise((resolve, reject) => withApiKey(services, key, resolve, reject));
}

/** The claims of a live token of ours, either form (null: not one), for routes that authenticate outside a hook. */
export function verifyToken(services: Services, credential: string): Promise<TokenClaims | null> {
  return new Promise((resolve, reject) => withToken(services, credential, resolve, reject));
}
