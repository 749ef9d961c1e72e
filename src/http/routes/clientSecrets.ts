// POST /v1/realtime/client-secrets: a permanent API key buys a short-lived token.
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.js';
import { requireApiKey } from '../auth.js';
import { ClientSecretsBody, ClientSecretsQuery, ClientSecretsResponse } from '../schemas.js';

export const clientSecretsRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  app.post<{ Querystring: { email?: string } }>(
    '/v1/realtime/client-secrets',
    {
      onRequest: requireApiKey(services),
      schema: {
        summary: 'Exchange the server API key for an ephemeral token',
        tags: ['realtime'],
        body: ClientSecretsBody,
        querystring: ClientSecretsQuery,
        response: { 200: ClientSecretsResponse, 401: { $ref: 'ShapeA#' }, 422: { $ref: 'ShapeB#' } },
      },
    },
    // Synchronous: no promise per request.
    (req) => {
      const { token, claims } = services.tokens.mint(req.apiKeyId!, req.query.email);
      services.metrics.tokensIssued.inc();
      return {
        ephemeral_token: token,
        token_type: 'bearer' as const,
        expires_at: new Date(claims.exp * 1000).toISOString(),
        ephemeralToken: token,
        ttl: claims.exp - claims.iat,
      };
    },
  );
};
