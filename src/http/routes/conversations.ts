// GET /v1/realtime/conversations/{id}: the API key's owner reads a call's record and transcript.
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.js';
import { requireApiKey } from '../auth.js';
import { HttpError, shapeA } from '../errors.js';

const ConversationResponse = Type.Object({
  id: Type.String(),
  object: Type.Literal('realtime.conversation'),
  state: Type.String(),
  end_reason: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  connected_at: Type.Union([Type.String(), Type.Null()]),
  ended_at: Type.Union([Type.String(), Type.Null()]),
  end_user: Type.Union([Type.String(), Type.Null()]),
  params: Type.Record(Type.String(), Type.Unknown()),
  items: Type.Array(Type.Object({ role: Type.String(), text: Type.String(), created_at: Type.String() })),
});

export const conversationRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  app.get<{ Params: { id: string } }>(
    '/v1/realtime/conversations/:id',
    {
      onRequest: requireApiKey(services),
      schema: {
        summary: "A conversation's record and transcript (API key of its owner)",
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        response: { 200: ConversationResponse, 401: { $ref: 'ShapeA#' }, 404: { $ref: 'ShapeA#' } },
      },
    },
    async (req) => {
      const record = await services.conversations.get(req.params.id);
      // Another key's conversation is indistinguishable from a missing one.
      if (!record || record.apiKeyId !== req.apiKeyId) throw new HttpError(404, shapeA('No such conversation.'));
      const items = await services.conversations.turns(record.threadId);
      return {
        id: record.id,
        object: 'realtime.conversation' as const,
        state: record.state,
        end_reason: record.endReason,
        created_at: record.createdAt,
        connected_at: record.connectedAt,
        ended_at: record.endedAt,
        end_user: record.endUser,
        params: record.params,
        items: items.map((i) => ({ role: i.role, text: i.text, created_at: i.createdAt })),
      };
    },
  );
};
