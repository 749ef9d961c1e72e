// Outbound phone calls: POST /v1/realtime/sip/calls (API key) has the node's SIP door call a number
// (through the trunk), a SIP URI, or a phone registered with Parley, with a session for the agent
// that talks when the callee answers. The call is the same as an incoming one from then on: its
// record, webhooks (call.started, call.ended, call.failed with the SIP status), sideband
// (/v1/realtime?call_id=…) and /hangup. The call is opened as every door opens one
// (calls/door.ts): a node that takes no more calls has another node with room and a SIP door place
// it, and a refusal is answered from the HTTP doors' table (doorRefusals.ts). Errors are OpenAI's
// error objects.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { applyOpenAiSession, openAiDefaultSession, OpenAiSessionSchema } from '../../calls/protocol/openaiSession.js';
import type { Services } from '../../services.js';
import { openAiKeyError, requireApiKey } from '../auth.js';
import { httpRefusal } from '../doorRefusals.js';
import { openAiError } from '../errors.js';
import { placeRequestElsewhere, sendAnswer } from '../nodeForwarding.js';
import { bodyProblem } from './openai.js';

const SipCallRequest = Type.Object(
  {
    to: Type.String({
      minLength: 1,
      maxLength: 300,
      description: "Whom to call: a number in E.164 (+4930…, or tel:+4930…) through the SIP trunk (SIP_OUTBOUND_TRUNK), a SIP URI (sip:user@host[:port]), or the user name of a phone registered with Parley's registrar (SIP_USERS). It must match one of the key's SIP_OUTBOUND_ALLOW patterns.",
    }),
    from: Type.Optional(Type.String({ pattern: '^\\+?[A-Za-z0-9._~-]{1,64}$', description: 'The caller id (the From user): a number or a name. Default: SIP_OUTBOUND_CALLER_ID.' })),
    session: Type.Optional(OpenAiSessionSchema),
    ring_timeout_s: Type.Optional(Type.Integer({ minimum: 5, maximum: 120, description: 'How long the phone rings before the call is given up (failed, end_reason no_answer). Default 30.' })),
    wait_for_callee: Type.Optional(Type.Boolean({ description: 'The agent waits for the callee to speak first. Default false: it speaks as soon as the call is answered.' })),
  },
  { title: 'SipCallRequest', additionalProperties: false },
);

const SipCallResponse = Type.Object(
  {
    call_id: Type.String({ description: 'The call (conv_…): its record, sideband, hangup; its outcome comes in the call.started / call.ended / call.failed webhooks.' }),
    to: Type.String({ description: 'The destination as called' }),
    from: Type.String({ description: 'The caller id' }),
  },
  { title: 'SipCallResponse' },
);

/** The schemas above the document names (components.schemas). */
export const SIP_CALLS_NAMED_SCHEMAS = [SipCallRequest, SipCallResponse];

const DEFAULT_RING_TIMEOUT_S = 30;

export const sipCallsRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  app.post<{ Body: Static<typeof SipCallRequest> }>(
    '/v1/realtime/sip/calls',
    {
      onRequest: requireApiKey(services, openAiKeyError),
      attachValidation: true,
      schema: {
        summary: 'Places an outbound phone call with an agent on it (API key)',
        tags: ['openai'],
        body: SipCallRequest,
        response: {
          201: SipCallResponse,
          ...Object.fromEntries([400, 401, 403, 404, 409, 429, 503].map((s) => [s, { $ref: 'OpenAiError#' }])),
        },
      },
    },
    async (req, reply) => {
      const problem = bodyProblem(req);
      if (problem) throw problem;
      const dialer = services.sipDialer.dialer;
      if (!dialer) throw openAiError(409, 'sip_not_enabled', 'This server has no SIP door (SIP_PORT is not set), so it cannot place phone calls.');
      const applied = applyOpenAiSession(openAiDefaultSession(services.sessionDefaults), req.body.session ?? {}, services.sessionDefaults.turnDetection);
      if (!applied.ok) throw openAiError(400, applied.problem.code, applied.problem.message, applied.problem.param || null);
      const elsewhere = placeRequestElsewhere(services, req, { door: 'sip', log: req.log, only: (node) => Boolean(node.sip_address) }, Buffer.from(JSON.stringify(req.body)));
      const result = await dialer.dial({
        apiKeyId: req.apiKeyId!,
        to: req.body.to,
        from: req.body.from,
        session: applied.session,
        ringTimeoutMs: (req.body.ring_timeout_s ?? DEFAULT_RING_TIMEOUT_S) * 1000,
        waitForCallee: req.body.wait_for_callee ?? false,
        passedOn: req.forwardedFromNode !== undefined,
        // A node at its limit or above its load threshold has a node with room and a SIP door place the call.
        ...(elsewhere ? { elsewhere } : {}),
      });
      if (!result.ok && 'call' in result) {
        const refusal = result.call;
        if ((refusal.kind === 'full' || refusal.kind === 'loaded') && refusal.placed) return sendAnswer(reply, refusal.placed);
        throw httpRefusal('openai', refusal, services.metrics);
      }
      if (!result.ok) {
        const { status, code, message, param, retryAfterSeconds } = result.refusal;
        throw openAiError(status, code, message, param ?? null, retryAfterSeconds ? { 'Retry-After': String(retryAfterSeconds) } : {});
      }
      return reply.code(201).header('Location', `/v1/realtime/calls/${result.conversationId}`).send({ call_id: result.conversationId, to: result.to, from: result.from });
    },
  );
};
