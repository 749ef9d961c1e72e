// POST /v1/realtime/calls: an SDP offer becomes an SDP answer and a live call.
import type { FastifyPluginAsync } from 'fastify';
import { CallCapacityExceeded, OfferRejected } from '../../calls/callManager.js';
import { readOffer } from '../../calls/sdpOffer.js';
import { sessionFromParams } from '../../calls/protocol/orgaSession.js';
import type { Services } from '../../services.js';
import { requireToken } from '../auth.js';
import { HttpError, ValidationFailure, shapeA } from '../errors.js';
import { passCallsWhenFull } from '../nodeForwarding.js';
import { CallsBody, CallsResponse, type CallsBodyInput } from '../schemas.js';

export const callRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  app.post<{ Body: CallsBodyInput }>(
    '/v1/realtime/calls',
    {
      onRequest: requireToken(services),
      preParsing: passCallsWhenFull(services),
      schema: {
        summary: 'Create a call: SDP offer in, SDP answer and conversation_id out',
        body: CallsBody,
        response: { 200: CallsResponse, 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' }, 422: { $ref: 'ShapeB#' }, 503: { $ref: 'ShapeA#' } },
      },
    },
    async (req) => {
      const { offer } = req.body;
      const reading = readOffer(offer.sdp);
      if (!reading.ok) {
        throw new ValidationFailure(
          reading.problems.map((p) => ({ type: 'value_error', loc: ['body', 'offer', 'sdp'], msg: `Value error, ${p}`, input: null })),
        );
      }
      const { plan } = reading;
      // Candidates are matched to the offer's m-lines by mid, or by index when the mid is absent.
      const candidates = offer.candidates
        .map((c) => ({ candidate: c.candidate ?? '', mid: c.sdpMid ?? (c.sdpMLineIndex != null ? plan.mids[c.sdpMLineIndex] : undefined) ?? plan.audioMid }))
        .filter((c) => c.candidate.trim() !== '');
      const resume = await resumeThread(services, req.apiKeyId!, req.body.params.conversation_id);
      try {
        const { answerSdp, conversationId } = await services.calls.create({
          ...(resume ? { resume } : {}),
          apiKeyId: req.apiKeyId!,
          endUser: req.token!.end_user ?? null,
          offerSdp: offer.sdp,
          plan,
          candidates,
          session: sessionFromParams(req.body.params, services.sessionDefaults),
          protocol: 'orga',
        });
        return { answer: { sdp: answerSdp, type: 'answer' as const }, conversation_id: conversationId };
      } catch (err) {
        if (err instanceof CallCapacityExceeded) throw new HttpError(503, shapeA(err.message), { 'Retry-After': '5' });
        if (!(err instanceof OfferRejected)) throw err;
        throw new ValidationFailure([
          { type: 'value_error', loc: ['body', 'offer', 'sdp'], msg: `Value error, the SDP offer could not be applied: ${err.message}`, input: null },
        ]);
      }
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
