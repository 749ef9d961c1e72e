// The OpenAI front door (Realtime GA over WebRTC), for apps built on `openai` and
// `@openai/agents-realtime`: client_secrets, calls with a raw SDP or multipart body answered with
// the SDP itself (201, Location), and hangup. Errors are OpenAI's error objects.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { applyOpenAiSession, openAiDefaultSession, openAiSessionObject, paramProblem } from '../../calls/protocol/openaiSession.js';
import type { Session } from '../../session/session.js';
import type { Services } from '../../services.js';
import { CLIENT_SECRET_PREFIX, openAiKeyError, requireApiKey, requireToken, requireTokenOrApiKey } from '../auth.js';
import { HttpError, openAiError } from '../errors.js';
import { forwardTo, keepBodyWhenFull, sendAnswer } from '../nodeForwarding.js';
import { callFromOffer } from '../offerCall.js';
import type { OpenApiRouteConfig } from '../openapi.js';

/** OpenAI's client secrets live 10 s to 2 h, 10 min unless asked. */
const ClientSecretsCreate = Type.Object({
  expires_after: Type.Optional(
    Type.Object({ anchor: Type.Optional(Type.Literal('created_at')), seconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 7200 })) }),
  ),
  session: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { title: 'OpenAiClientSecretRequest' });
const ClientSecretResponse = Type.Object(
  { value: Type.String({ description: 'ek_…: the client secret.' }), expires_at: Type.Integer({ description: 'Unix seconds.' }), session: Type.Record(Type.String(), Type.Unknown()) },
  { title: 'OpenAiClientSecret', description: "A client secret and the session it starts calls with" },
);

// The OpenAI forms' bodies: the handler reads them itself (readCallForm), so they are described
// here for the document only (route config openApiBody), not validated.
const SdpOffer = Type.String({ title: 'SdpOffer', description: 'The raw SDP offer.' });
const OpenAiCallForm = Type.Object(
  {
    sdp: Type.String({ description: 'The SDP offer (a field or a file part).' }),
    session: Type.Optional(Type.String({ contentMediaType: 'application/json', description: 'The session (JSON), applied over the client secret\'s.' })),
  },
  { title: 'OpenAiCallForm', required: ['sdp'] },
);
const SdpAnswer = Type.String({ title: 'SdpAnswer', description: 'The SDP answer; the call id is in Location.' });

/** The schemas above the document names (components.schemas). */
export const OPENAI_NAMED_SCHEMAS = [ClientSecretsCreate, ClientSecretResponse, SdpOffer, OpenAiCallForm, SdpAnswer];
const DEFAULT_SECRET_SECONDS = 600;
/** The largest session a client secret carries (stored until it expires): instructions and tools of any real app fit. */
const MAX_SECRET_SESSION_BYTES = 64 * 1024;

/** Which calls requests this plugin answers: raw SDP or multipart, as OpenAI's clients send them. */
export const OPENAI_CALL_FORMS = /^(application\/sdp|multipart\/form-data)\b/i;

/** The OpenAI-form calls route shares its path with the Orga JSON form; the request's Content-Type picks. */
export const callFormConstraint = {
  name: 'callForm',
  storage() {
    const handlers = new Map<string, unknown>();
    return { get: (k: string) => (handlers.get(k) ?? null) as never, set: (k: string, v: unknown) => void handlers.set(k, v) };
  },
  deriveConstraint: (req: { headers: Record<string, string | string[] | undefined> }) =>
    OPENAI_CALL_FORMS.test(String(req.headers['content-type'] ?? '')) ? 'openai' : 'orga',
  mustMatchWhenDerived: false,
  validate(value: unknown) {
    if (value !== 'openai' && value !== 'orga') throw new Error('callForm is openai or orga');
  },
};

/** A body that failed its schema, as an OpenAI error (400). */
export function bodyProblem(req: FastifyRequest): HttpError | undefined {
  const v = req.validationError as (Error & { validation?: Parameters<typeof paramProblem>[0] }) | undefined;
  if (!v) return undefined;
  if (!v.validation) return openAiError(400, 'invalid_json', 'The body is not valid JSON.');
  const p = paramProblem(v.validation, '');
  return openAiError(400, p.code, p.message, p.param || null);
}

/** An SDP offer and an optional session (JSON), from either form. */
async function readCallForm(req: FastifyRequest): Promise<{ sdp: string; session: unknown }> {
  if (typeof req.body === 'string') return { sdp: req.body, session: undefined };
  const form = req.body as FormData;
  const sdp = form.get('sdp');
  if (sdp === null) throw openAiError(400, 'missing_required_parameter', "Missing required parameter: 'sdp'.", 'sdp');
  const sessionPart = form.get('session');
  let session: unknown;
  if (sessionPart !== null) {
    try {
      session = JSON.parse(typeof sessionPart === 'string' ? sessionPart : await sessionPart.text());
    } catch {
      throw openAiError(400, 'invalid_json', "The 'session' part is not valid JSON.", 'session');
    }
  }
  return { sdp: typeof sdp === 'string' ? sdp : await sdp.text(), session };
}

export const openAiRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  // Raw SDP as text; multipart parsed by the platform's FormData (undici), within the body limit.
  app.addContentTypeParser('application/sdp', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer' }, (req, body, done) => {
    new Response(new Uint8Array(body as Buffer), { headers: { 'content-type': String(req.headers['content-type']) } })
      .formData()
      .then((form) => done(null, form), () => done(openAiError(400, 'invalid_multipart', 'The multipart body cannot be read.'), undefined));
  });

  app.post<{ Body: Static<typeof ClientSecretsCreate> }>(
    '/v1/realtime/client_secrets',
    {
      onRequest: requireApiKey(services, openAiKeyError),
      attachValidation: true,
      schema: {
        summary: "OpenAI's client secret: an ephemeral key (ek_…) for a browser, with the call's initial session (API key)",
        tags: ['openai'],
        body: ClientSecretsCreate,
        response: { 200: ClientSecretResponse, 400: { $ref: 'OpenAiError#' }, 401: { $ref: 'OpenAiError#' }, 403: { $ref: 'OpenAiError#' } },
      },
    },
    async (req) => {
      const problem = bodyProblem(req);
      if (problem) throw problem;
      const wire = req.body?.session;
      const applied = applyOpenAiSession(openAiDefaultSession(services.sessionDefaults), wire ?? {}, services.sessionDefaults.turnDetection);
      if (!applied.ok) throw openAiError(400, applied.problem.code, applied.problem.message, applied.problem.param);
      // Refused now rather than at the call: the app learns it where it chose the model.
      if (!services.models.allows(applied.session.model, req.apiKeyId!)) {
        throw openAiError(403, 'model_not_allowed', `This API key may not use the model ${applied.session.model}; GET /v1/realtime/models lists the models it may use.`, 'session.model');
      }
      const size = Buffer.byteLength(JSON.stringify(applied.session));
      if (size > MAX_SECRET_SESSION_BYTES) {
        throw openAiError(400, 'session_too_large', `The session is ${size} bytes; a client secret carries at most ${MAX_SECRET_SESSION_BYTES} (instructions and tools included).`, 'session');
      }
      const { token, claims } = services.tokens.mint(req.apiKeyId!, undefined, req.body?.expires_after?.seconds ?? DEFAULT_SECRET_SECONDS);
      services.metrics.tokensIssued.inc();
      if (wire) await services.clientSecretSessions.put(claims.jti, applied.session, claims.exp);
      return { value: CLIENT_SECRET_PREFIX + token, expires_at: claims.exp, session: openAiSessionObject(applied.session, `sess_${claims.jti}`) };
    },
  );

  app.post(
    '/v1/realtime/calls',
    {
      constraints: { callForm: 'openai' },
      config: {
        openApiBody: { 'application/sdp': SdpOffer, 'multipart/form-data': OpenAiCallForm },
        openApiHeaders: { 201: { Location: Type.String({ description: '/v1/realtime/calls/{call id}: the call id names the call for hangup.' }) } },
      } satisfies OpenApiRouteConfig,
      onRequest: requireToken(services),
      preParsing: keepBodyWhenFull(services),
      schema: {
        summary: "OpenAI's forms: the raw SDP offer, or multipart sdp and session; 201 with the SDP answer and Location (ephemeral token)",
        tags: ['openai'],
        produces: ['application/sdp'],
        response: { 201: SdpAnswer, 400: { $ref: 'OpenAiError#' }, 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' }, 429: { $ref: 'OpenAiError#' }, 503: { $ref: 'OpenAiError#' } },
      },
    },
    (req, reply) => answerCall(req, reply),
  );

  // The route earlier WebRTC clients post their offer to (before /v1/realtime/calls): the raw SDP to
  // /v1/realtime?model=…, answered the same way.
  app.post<{ Querystring: { model?: string } }>(
    '/v1/realtime',
    {
      config: { openApiBody: { 'application/sdp': SdpOffer } } satisfies OpenApiRouteConfig,
      onRequest: requireToken(services),
      preParsing: keepBodyWhenFull(services),
      schema: {
        summary: "OpenAI's earlier WebRTC route: the raw SDP offer posted to /v1/realtime?model=…; 201 with the SDP answer (ephemeral token)",
        tags: ['openai'],
        querystring: { type: 'object', properties: { model: { type: 'string', maxLength: 128 } } },
        produces: ['application/sdp'],
        response: { 201: SdpAnswer, 400: { $ref: 'OpenAiError#' }, 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' }, 429: { $ref: 'OpenAiError#' }, 503: { $ref: 'OpenAiError#' } },
      },
    },
    (req, reply) => answerCall(req, reply, req.query.model),
  );

  /** An OpenAI-form offer answered: the call starts with the app's session (`model`: the earlier route's query). */
  async function answerCall(req: FastifyRequest, reply: FastifyReply, model?: string) {
    const { sdp, session: wire } = await readCallForm(req);
    // The app's session: what it set at client_secrets, then the request's own.
    let session: Session = openAiDefaultSession(services.sessionDefaults);
    const minted = await services.clientSecretSessions.get(req.token!.jti);
    if (minted) session = { ...session, ...(minted as Session) };
    if (model) session = { ...session, model };
    if (wire !== undefined) {
      const applied = applyOpenAiSession(session, wire, services.sessionDefaults.turnDetection);
      if (!applied.ok) throw openAiError(400, applied.problem.code, applied.problem.message, applied.problem.param);
      session = applied.session;
    }
    const outcome = await callFromOffer(
      services,
      req,
      { apiKeyId: req.apiKeyId!, tokenId: req.token!.jti, endUser: req.token!.end_user ?? null, sdp, session, protocol: 'openai' },
      {
        form: 'openai',
        unusable: (problems) => openAiError(400, 'invalid_offer', `The SDP offer cannot be used: ${problems.join('; ')}.`, 'sdp'),
        rejected: (message) => openAiError(400, 'invalid_offer', `The SDP offer could not be applied: ${message}`, 'sdp'),
      },
    );
    if ('placed' in outcome) return sendAnswer(reply, outcome.placed);
    return reply.code(201).type('application/sdp').header('Location', `/v1/realtime/calls/${outcome.conversationId}`).send(outcome.answerSdp);
  }

  app.post<{ Params: { id: string } }>(
    '/v1/realtime/calls/:id/hangup',
    {
      onRequest: requireTokenOrApiKey(services),
      schema: {
        summary: 'Ends a call (API key of its owner, or a token of that key)',
        tags: ['openai'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        response: { 200: Type.Object({}), 401: { $ref: 'ShapeA#' }, 403: { $ref: 'ShapeA#' }, 404: { $ref: 'OpenAiError#' }, 503: { $ref: 'OpenAiError#' } },
      },
    },
    async (req, reply) => {
      const call = services.calls.get(req.params.id);
      if (call && call.apiKeyId === req.apiKeyId) {
        await call.end('hangup_request');
        return {};
      }
      // A live call of this key that another worker or node carries: that one hangs it up.
      const owner = call || req.forwardedFromNode ? undefined : await liveCallOwner(services, req.params.id, req.apiKeyId!);
      if (owner) {
        const answer = await forwardTo(owner, req, undefined, services.nodeAuth).catch(() => {
          throw openAiError(503, 'node_unreachable', 'The server carrying this call does not answer; retry shortly.', null, { 'Retry-After': '5' });
        });
        return sendAnswer(reply, answer);
      }
      // Another key's call is indistinguishable from a missing one.
      throw openAiError(404, 'call_not_found', `No live call with id '${req.params.id}'.`, 'call_id');
    },
  );
};

/** The listener of the node carrying live call `id` of this key, when that is another node. */
export async function liveCallOwner(services: Services, id: string, apiKeyId: string): Promise<string | undefined> {
  const record = await services.conversations.get(id);
  if (!record || record.apiKeyId !== apiKeyId || !record.nodeId || record.nodeId === services.nodeId) return undefined;
  if (record.state !== 'connecting' && record.state !== 'active') return undefined;
  return services.nodeDirectory.urlOf(record.nodeId);
}
