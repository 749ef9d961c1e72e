// GET /v1/realtime/conversations/{id}: the API key's owner reads a call's record and transcript;
// /recording: its recording (Ogg Opus, byte ranges served by @fastify/send).
import send from '@fastify/send';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CallQualitySchema, CallUsageSchema } from '../../calls/callFigures.js';
import type { Services } from '../../services.js';
import { sipStatusOf, type ConversationRecord } from '../../storage/conversations.js';
import { requireApiKey } from '../auth.js';
import { HttpError, shapeA } from '../errors.js';
import type { OpenApiRouteConfig } from '../openapi.js';

const Recording = Type.String({ format: 'binary', description: 'Ogg Opus (RFC 7845), two channels: the caller left, the agent right' });

export const ConversationResponse = Type.Object(
  {
  id: Type.String(),
  object: Type.Literal('realtime.conversation'),
  state: Type.String(),
  end_reason: Type.Union([Type.String(), Type.Null()]),
  sip_status: Type.Union([Type.Integer(), Type.Null()], { description: "An outbound SIP call's final INVITE status (200, 486 busy, 487 unanswered…); null for other calls" }),
  created_at: Type.String(),
  connected_at: Type.Union([Type.String(), Type.Null()]),
  ended_at: Type.Union([Type.String(), Type.Null()]),
  end_user: Type.Union([Type.String(), Type.Null()]),
  params: Type.Record(Type.String(), Type.Unknown()),
  items: Type.Array(
    Type.Object({
      role: Type.String(),
      text: Type.String(),
      created_at: Type.String(),
      image: Type.Optional(Type.String({ description: "The picture the turn showed the model (the caller's camera), as a small JPEG thumbnail data URL" })),
    }),
  ),
  usage: Type.Union([CallUsageSchema, Type.Null()], { description: 'What the call used, recorded at its end; null before it ended' }),
  quality: Type.Union([CallQualitySchema, Type.Null()], { description: 'How its wire behaved, recorded at its end; null before it ended or when it never connected' }),
  recording: Type.Union([Type.Literal('recording'), Type.Literal('complete'), Type.Literal('truncated'), Type.Literal('failed'), Type.Null()], {
    description:
      "The call's recording (GET …/recording): being written, complete, truncated (stopped early at RECORDING_MAX_BYTES or a low disk; a valid file), failed (stopped by an error; what was written is kept), or null (not recorded)",
  }),
  },
  { title: 'Conversation', description: "A call's record and transcript" },
);

export const conversationRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  app.get<{ Params: { id: string } }>(
    '/v1/realtime/conversations/:id',
    {
      onRequest: requireApiKey(services),
      schema: {
        summary: "A conversation's record and transcript (API key of its owner)",
        tags: ['realtime'],
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
        ...recordLifecycle(record),
        params: record.params,
        items: items.map((i) => ({ role: i.role, text: i.text, created_at: i.createdAt, ...(i.image ? { image: i.image } : {}) })),
        usage: record.usage,
        quality: record.quality,
        recording: record.recording,
      };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/realtime/conversations/:id/recording',
    {
      onRequest: requireApiKey(services),
      config: {
        openApiHeaders: {
          206: { 'Content-Range': Type.String({ description: 'bytes first-last/size' }) },
          416: { 'Content-Range': Type.String({ description: 'bytes */size' }) },
        },
      } satisfies OpenApiRouteConfig,
      schema: {
        summary: "A conversation's recording, whole or a byte range (API key of its owner); a call still running is served as recorded so far",
        tags: ['realtime'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        produces: ['audio/ogg'],
        response: { 200: Recording, 206: Recording, 401: { $ref: 'ShapeA#' }, 404: { $ref: 'ShapeA#' }, 416: { $ref: 'ShapeA#' } },
      },
    },
    async (req, reply) => {
      const record = await services.conversations.get(req.params.id);
      if (!record || record.apiKeyId !== req.apiKeyId) throw new HttpError(404, shapeA('No such conversation.'));
      return sendRecording(services, record, req, reply);
    },
  );
};

/**
 * Sends a conversation's recording (its owner already checked): the file, a byte range of it, or the
 * answer that says why not. The API route and the operator console serve it alike.
 */
export async function sendRecording(services: Services, record: ConversationRecord, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const name = services.recordings.fileName(record.id);
  if (!record.recording || !name) throw new HttpError(404, shapeA('This conversation has no recording.', 'recording_not_found'));
  const sent = await send(req.raw, `/${name}`, { root: services.recordings.dir, contentType: false, cacheControl: false, dotfiles: 'deny', index: false });
  if (sent.type !== 'file') {
    // Deleted after RECORDING_RETENTION_DAYS, or on a directory this node does not share.
    if (sent.statusCode === 404) throw new HttpError(404, shapeA('The recording is not available (deleted after its retention, or kept by another node).', 'recording_not_found'));
    if (sent.statusCode === 416) {
      reply.header('content-range', sent.headers['Content-Range']);
      throw new HttpError(416, shapeA('The requested range is not within the recording.', 'range_not_satisfiable'));
    }
    throw new HttpError(sent.statusCode, shapeA('The recording cannot be read.'));
  }
  reply.code(sent.statusCode).headers(sent.headers);
  // 304 (the client's copy is current) has no body.
  if (sent.statusCode !== 304) reply.type('audio/ogg');
  return reply.send(sent.stream);
}

/** How a recorded call went, as both the API and the console show it. */
export function recordLifecycle(record: ConversationRecord) {
  return {
    state: record.state,
    end_reason: record.endReason,
    sip_status: sipStatusOf(record.outcome),
    created_at: record.createdAt,
    connected_at: record.connectedAt,
    ended_at: record.endedAt,
    end_user: record.endUser,
  };
}
