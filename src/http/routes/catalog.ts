// GET /v1/realtime/models and /v1/realtime/voices: what params.model and params.voice accept.
import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_VOICE, VOICES } from '../../session/catalog.js';
import type { Services } from '../../services.js';
import { requireTokenOrApiKey } from '../auth.js';
import { ModelsResponse, VoicesResponse } from '../schemas.js';

export const catalogRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  const auth = requireTokenOrApiKey(services);
  // An API key that is not live: 401; a token: 403 without a credential, 401 when not live.
  const authErrors = { 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' } };
  // Only the models the caller's key may use (the catalogue's `keys`), each alias a row of its own.
  app.get('/v1/realtime/models', { onRequest: auth, schema: { summary: "Models the caller's key may use (API key or token)", tags: ['realtime'], response: { 200: ModelsResponse, ...authErrors } } }, async (req) => {
    const models = services.models;
    const entries = models.listFor(req.apiKeyId!);
    return {
      default: models.catalogue.default,
      models: entries.flatMap((e) => [e.id, ...e.aliases].map((id) => ({ id, description: e.description, kind: e.kind, runs: e.id, fallback: e.fallback }))),
    };
  });
  app.get('/v1/realtime/voices', { onRequest: auth, schema: { summary: 'Voices a call may use (API key or token)', tags: ['realtime'], response: { 200: VoicesResponse, ...authErrors } } }, async () => ({
    default: DEFAULT_VOICE,
    voices: VOICES,
  }));
};
