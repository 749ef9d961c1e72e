// Bearer authentication for the two credential kinds: the permanent API key and the ephemeral token.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { looksLikeApiKey } from '../auth/apiKeys.js';
import type { TokenClaims } from '../auth/tokens.js';
import type { Services } from '../services.js';
import { HttpError, MESSAGES, nestedApiKeyError, shapeA } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    apiKeyId?: string;
    token?: TokenClaims;
  }
}

/** The credential of `Authorization: Bearer <credential>` (scheme case-insensitive, RFC 6750), or null. */
export function bearerCredential(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

/** client-secrets: a live API key, else 401 with the nested error object. */
export function requireApiKey(services: Services) {
  return async (req: FastifyRequest, _reply: FastifyReply) => {
    const credential = bearerCredential(req.headers.authorization);
    const id = credential && looksLikeApiKey(credential) ? await services.keyCache.authenticate(credential) : null;
    if (!id) throw new HttpError(401, nestedApiKeyError());
    req.apiKeyId = id;
  };
}

/** ice-config and calls: no bearer credential is 403; anything but a live token of ours is 401. */
export function requireToken(services: Services) {
  return async (req: FastifyRequest, _reply: FastifyReply) => {
    const claims = await verifiedToken(services, req);
    req.token = claims;
    req.apiKeyId = claims.sub;
  };
}

/** Catalogue reads: either a live token or a live API key. */
export function requireTokenOrApiKey(services: Services) {
  return async (req: FastifyRequest, _reply: FastifyReply) => {
    const credential = bearerCredential(req.headers.authorization);
    if (credential && looksLikeApiKey(credential)) {
      const id = await services.keyCache.authenticate(credential);
      if (!id) throw new HttpError(401, nestedApiKeyError());
      req.apiKeyId = id;
      return;
    }
    req.token = await verifiedToken(services, req);
    req.apiKeyId = req.token.sub;
  };
}

async function verifiedToken(services: Services, req: FastifyRequest): Promise<TokenClaims> {
  const credential = bearerCredential(req.headers.authorization);
  if (!credential) throw new HttpError(403, shapeA(MESSAGES.notAuthenticated));
  const claims = await services.tokens.verify(credential);
  // A revoked key's tokens die with it.
  if (!claims || !(await services.keyCache.isActive(claims.sub))) throw new HttpError(401, shapeA(MESSAGES.invalidToken));
  return claims;
}
