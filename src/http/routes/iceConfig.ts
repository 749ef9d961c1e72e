// GET /v1/realtime/ice-config: STUN and the TURN servers that answer, TURN credentials minted per response.
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.js';
import { requireToken } from '../auth.js';
import { IceConfigResponse } from '../schemas.js';

export const iceConfigRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  app.get(
    '/v1/realtime/ice-config',
    {
      onRequest: requireToken(services),
      schema: {
        summary: 'ICE servers for a call, with per-response TURN credentials (ephemeral token)',
        tags: ['realtime'],
        response: { 200: IceConfigResponse, 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' } },
      },
    },
    (req) => ({ iceServers: services.iceServers(req.token!, req.apiKeyId!) }),
  );
};
