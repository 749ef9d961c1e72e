// POST /v1/realtime/calls: an SDP offer becomes an SDP answer and a live call.
import { modelNames } from '../../config/models.js';
import type { FastifyPluginAsync } from 'fastify';
import { sessionFromParams } from '../../calls/protocol/orgaSession.js';
import type { Services } from '../../services.js';
import { requireToken } from '../auth.js';
import { ValidationFailure } from '../errors.js';
import { keepBodyWhenFull, sendAnswer } from '../nodeForwarding.js';
import { callFromOffer } from '../offerCall.js';
import { callSchemas, CallsResponse, type CallsBodyInput } from '../schemas.js';

export const callRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  const { CallsBody } = callSchemas(modelNames(services.config.MODELS));
  app.post<{ Body: CallsBodyInput }>(
    '/v1/realtime/calls',
    {
      onRequest: requireToken(services),
      preParsing: keepBodyWhenFull(services),
      schema: {
        summary: 'Create a call: SDP offer in, SDP answer and conversation_id out (ephemeral token)',
        tags: ['realtime'],
        body: CallsBody,
        response: { 200: CallsResponse, 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' }, 422: { $ref: 'ShapeB#' }, 429: { $ref: 'ShapeA#' }, 503: { $ref: 'ShapeA#' } },
      },
    },
    async (req, reply) => {
      const { offer } = req.body;
      const sdpProblem = (msg: string) => ({ type: 'value_error', loc: ['body', 'offer', 'sdp'], msg: `Value error, ${msg}`, input: null });
      const resume = await resumeThread(services, req.apiKeyId!, req.body.params.conversation_id);
      const outcome = await callFromOffer(
        services,
        req,
        {
          ...(resume ? { resume } : {}),
          apiKeyId: req.apiKeyId!,
          tokenId: req.token!.jti,
          endUser: req.token!.end_user ?? null,
          sdp: offer.sdp,
          candidates: offer.candidates,
          session: sessionFromParams(req.body.params, services.sessionDefaults),
          protocol: 'orga',
        },
        {
          form: 'orga',
          unusable: (problems) => new ValidationFailure(problems.map(sdpProblem)),
          rejected: (message) => new ValidationFailure([sdpProblem(`the SDP offer could not be applied: ${message}`)]),
        },
      );
      if ('placed' in outcome) return sendAnswer(reply, outcome.placed);
      return { answer: { sdp: outcome.answerSdp, type: 'answer' as const }, conversation_id: outcome.conversationId };
    },
  );
};

/** The thread and turns of a conversation this key may resume, or a 422 naming the problem. */
async function resumeThread(services: Services, apiKeyId: string, conversationId: string | undefined) {
  if (!conversationId) return undefined;
  const record = await services.conversations.get(conversationId);
  if (!record || record.apiKeyId !== apiKeyId) {
    throw new ValidationFailure([
      { type: 'value_error', loc: ['body', 'params', 'conversation_id'], msg: 'Value error, no conversation with this id belongs to this API key', input: conversationId },
    ]);
  }
  const turns = await services.conversations.turns(record.threadId);
  return { threadId: record.threadId, history: turns.map(({ role, text }) => ({ role, text })) };
}
