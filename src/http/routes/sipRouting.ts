// Routing of ringing SIP calls, OpenAI's way: after its realtime.call.incoming webhook, the app
// accepts a call (with a session), rejects it (a SIP status) or refers it elsewhere (302 before
// answering, a REFER inside the dialog after). A decision for a call another node or worker carries (the one the INVITE reached) is
// passed to it. Errors are OpenAI's error objects.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { applyOpenAiSession, OpenAiSessionSchema } from '../../calls/protocol/openaiSession.js';
import type { RouteDecision } from '../../sip/routing.js';
import type { Services } from '../../services.js';
import { openAiKeyError, requireApiKey } from '../auth.js';
import { openAiError, type HttpError } from '../errors.js';
import { forwardTo, sendAnswer } from '../nodeForwarding.js';
import { bodyProblem, liveCallOwner } from './openai.js';

const CallParams = Type.Object({ call_id: Type.String({ maxLength: 64 }) });
const SipRejectRequest = Type.Object(
  { status_code: Type.Optional(Type.Integer({ minimum: 400, maximum: 699, description: 'The SIP final response the caller gets (default 603 Decline).' })) },
  { title: 'SipRejectRequest' },
);
const SipReferRequest = Type.Object(
  {
    target_uri: Type.String({
      maxLength: 512,
      // A SIP or tel URI, nothing that could break out of the Contact header.
      pattern: '^(sips?|tel):[^\\s<>"]+$',
      description: 'Where the caller is sent: a sip:, sips: or tel: URI (the Contact of a 302 Moved Temporarily while the call rings, the Refer-To of a REFER once answered).',
    }),
  },
  { title: 'SipReferRequest' },
);
const Empty = Type.Object({});

/** The schemas above the document names (components.schemas). */
export const SIP_ROUTING_NAMED_SCHEMAS = [SipRejectRequest, SipReferRequest];

const DEFAULT_REJECT_STATUS = 603;

const errors = { 400: { $ref: 'OpenAiError#' }, 401: { $ref: 'OpenAiError#' }, 403: { $ref: 'OpenAiError#' }, 404: { $ref: 'OpenAiError#' }, 409: { $ref: 'OpenAiError#' }, 503: { $ref: 'OpenAiError#' } };

type DecisionRequest = FastifyRequest<{ Params: Static<typeof CallParams> }>;

export const sipRoutingRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  const { calls, sipRouting } = services;

  /** Why call `id` of this key takes no decision: gone or unknown (404), or no longer ringing (409). */
  function notRinging(id: string, apiKeyId: string, action: RouteDecision['kind']): HttpError {
    if (calls.get(id)?.apiKeyId === apiKeyId) {
      // Only a SIP call can be referred (answered or not); the others were answered already.
      const why = action === 'refer' ? 'it is not a phone call, so it cannot be transferred' : 'it was answered already';
      return openAiError(409, 'call_not_ringing', `Call '${id}' is no longer ringing: ${why}.`, 'call_id');
    }
    // Another key's call is indistinguishable from a missing one.
    return openAiError(404, 'call_not_found', `No ringing call with id '${id}'.`, 'call_id');
  }

  /** The answer of the node carrying call `id` when another one does; undefined when this node decides. */
  async function elsewhere(req: DecisionRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const { call_id: id } = req.params;
    if (sipRouting.isRinging(id, req.apiKeyId!) || calls.get(id) || req.forwardedFromNode) return undefined;
    const owner = await liveCallOwner(services, id, req.apiKeyId!);
    if (!owner) return undefined;
    const answer = await forwardTo(owner, req, Buffer.from(JSON.stringify(req.body ?? {})), services.nodeAuth).catch(() => {
      throw openAiError(503, 'node_unreachable', 'The server carrying this call does not answer; retry shortly.', null, { 'Retry-After': '5' });
    });
    return sendAnswer(reply, answer);
  }

  function decide(req: DecisionRequest, decision: RouteDecision): Record<string, never> {
    if (sipRouting.decide(req.params.call_id, req.apiKeyId!, decision) !== 'decided') throw notRinging(req.params.call_id, req.apiKeyId!, decision.kind);
    return {};
  }

  const options = (summary: string, body: TSchema) => ({
    onRequest: requireApiKey(services, openAiKeyError),
    attachValidation: true,
    schema: { summary, tags: ['openai'], params: CallParams, body, response: { 200: Empty, ...errors } },
  });

  app.post<{ Params: Static<typeof CallParams>; Body: Static<typeof OpenAiSessionSchema> }>(
    '/v1/realtime/calls/:call_id/accept',
    options("Answers a ringing SIP call with this session (OpenAI's session config) over the default agent's (API key)", OpenAiSessionSchema),
    async (req, reply) => {
      const problem = bodyProblem(req);
      if (problem) throw problem;
      const forwarded = await elsewhere(req, reply);
      if (forwarded) return forwarded;
      const { call_id: id } = req.params;
      const call = calls.get(id);
      if (!call || !sipRouting.isRinging(id, req.apiKeyId!)) throw notRinging(id, req.apiKeyId!, 'accept');
      const applied = applyOpenAiSession(call.session(), req.body ?? {}, services.sessionDefaults.turnDetection, '');
      if (!applied.ok) throw openAiError(400, applied.problem.code, applied.problem.message, applied.problem.param || null);
      if (!services.models.allows(applied.session.model, req.apiKeyId!)) {
        throw openAiError(403, 'model_not_allowed', `This API key may not use the model ${applied.session.model}; GET /v1/realtime/models lists the models it may use.`, 'model');
      }
      return decide(req, { kind: 'accept', session: applied.session });
    },
  );

  app.post<{ Params: Static<typeof CallParams>; Body: Static<typeof SipRejectRequest> }>(
    '/v1/realtime/calls/:call_id/reject',
    options('Rejects a ringing SIP call with a SIP status (default 603 Decline) (API key)', SipRejectRequest),
    async (req, reply) => {
      const problem = bodyProblem(req);
      if (problem) throw problem;
      const forwarded = await elsewhere(req, reply);
      if (forwarded) return forwarded;
      return decide(req, { kind: 'reject', status: req.body?.status_code ?? DEFAULT_REJECT_STATUS });
    },
  );

  app.post<{ Params: Static<typeof CallParams>; Body: Static<typeof SipReferRequest> }>(
    '/v1/realtime/calls/:call_id/refer',
    options('Sends a SIP call elsewhere: 302 Moved Temporarily to target_uri while it rings, a REFER (transfer) once answered (API key)', SipReferRequest),
    async (req, reply) => {
      const problem = bodyProblem(req);
      if (problem) throw problem;
      const forwarded = await elsewhere(req, reply);
      if (forwarded) return forwarded;
      // Answered: the caller is asked to call the target (the call ends once the target answers).
      if (sipRouting.transfer(req.params.call_id, req.apiKeyId!, req.body.target_uri)) return {};
      return decide(req, { kind: 'refer', target: req.body.target_uri });
    },
  );
};
