// GET /v1/realtime/models and /v1/realtime/voices: what params.model and params.voice accept.
import type { FastifyPluginAsync } from 'fastify';
import { DEFAULT_MODEL, DEFAULT_VOICE, MODELS, VOICES } from '../../session/catalog.js';
import type { Services } from '../../services.js';
import { requireTokenOrApiKey } from '../auth.js';
import { ModelsResponse, VoicesResponse } from '../schemas.js';

export const catalogRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  const auth = requireTokenOrApiKey(services);
  // An API key that is not live: 401; a token: 403 without a credential, 401 when not live.
  const authErrors = { 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' } };
  app.get('/v1/realtime/models', { onRequest: auth, schema: { summary: 'Models a call may use (API key or token)', tags: ['realtime'], response: { 200: ModelsResponse, ...authErrors } } }, async () => ({
    default: DEFAULT_MODEL,
    models: MODELS.map((m) => ({ ...m, runs: services.agents.engineOf(m.id) })),
  }));
  app.get('/v1/realtime/voices', { onRequest: auth, schema: { summary: 'Voices a call may use (API key or token)', tags: ['realtime'], response: { 200: VoicesResponse, ...authErrors } } }, async () => ({
    default: DEFAULT_VOICE,
    voices: VOICES,
  }));
};
