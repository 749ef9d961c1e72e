// Request and response schemas: the single source for validation, TypeScript types and OpenAPI.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_OFFER_CANDIDATES } from '../calls/webrtc/sdpOffer.js';
import { callParamsSchema } from '../session/params.js';

export const BODY_LIMIT = 256 * 1024;
/**
 * Nesting allowed in a JSON body: our deepest request (calls) nests 4 levels; 32 leaves room for any
 * extension and keeps validators and serialisers far from deep recursion.
 */
export const MAX_JSON_DEPTH = 32;

export const ClientSecretsBody = Type.Object({}, { additionalProperties: false, description: 'Empty: no fields are accepted.' });
export const ClientSecretsQuery = Type.Object({
  email: Type.Optional(Type.String({ format: 'email', maxLength: 320, description: "End user's e-mail (sent by the published server SDK); recorded on the token." })),
});

export const ClientSecretsResponse = Type.Object({
  ephemeral_token: Type.String({ description: 'The JWT.' }),
  token_type: Type.Literal('bearer'),
  expires_at: Type.String({ description: 'ISO 8601, UTC with Z.' }),
  ephemeralToken: Type.String({ description: 'Guide-form alias of ephemeral_token.' }),
  ttl: Type.Integer({ description: 'Remaining lifetime in whole seconds (guide form).' }),
}, { title: 'ClientSecret', description: 'An ephemeral token for one client' });

export const IceServer = Type.Object({
  urls: Type.Array(Type.String()),
  username: Type.Optional(Type.String()),
  credential: Type.Optional(Type.String()),
}, { title: 'IceServer' });
export const IceConfigResponse = Type.Object({ iceServers: Type.Array(IceServer) }, { title: 'IceConfig', description: 'STUN and TURN servers; TURN credentials minted for this response' });

export const Candidate = Type.Object({
  candidate: Type.Optional(Type.String({ maxLength: 1024 })),
  sdpMid: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  sdpMLineIndex: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 255 }), Type.Null()])),
}, { title: 'IceCandidate', description: "A candidate as the browser's RTCIceCandidate.toJSON() writes it" });
export type CandidateInput = Static<typeof Candidate>;


/** The Orga calls request's schemas for a catalogue whose ids and aliases are `models`. */
export function callSchemas(models: readonly string[]) {
  const CallParams = callParamsSchema(models);
  const CallsBody = Type.Object({
    offer: Type.Object({
      sdp: Type.String({ maxLength: BODY_LIMIT }),
      type: Type.Literal('offer'),
      candidates: Type.Array(Candidate, { maxItems: MAX_OFFER_CANDIDATES }),
    }),
    params: CallParams,
  }, { title: 'CallRequest', description: "Orga's form: the SDP offer with its candidates, and the session's parameters" });
  return { CallParams, CallsBody };
}
export type CallsBodyInput = Static<ReturnType<typeof callSchemas>['CallsBody']>;

export const CallsResponse = Type.Object({
  answer: Type.Object({ sdp: Type.String(), type: Type.Literal('answer') }),
  conversation_id: Type.String(),
}, { title: 'CallAnswer', description: 'The SDP answer; the call is live' });

export const VoicesResponse = Type.Object({
  default: Type.String(),
  voices: Type.Array(Type.Object({ name: Type.String(), lang: Type.String(), gender: Type.String() })),
}, { title: 'Voices', description: 'What params.voice accepts' });

export const ModelsResponse = Type.Object({
  default: Type.String(),
  models: Type.Array(
    Type.Object({
      id: Type.String({ description: 'The name a call asks for (params.model, session.model, ?model=).' }),
      description: Type.String(),
      kind: Type.Union(['offline', 'echo', 'audio-echo', 'cascade', 'realtime'].map((k) => Type.Literal(k)), { description: 'What runs it: the built-in agent, a test agent, an LLM with speech recognition and synthesis, or a realtime model upstream.' }),
      runs: Type.String({ description: 'The catalogue model it runs: its own id, or for an alias the id it stands for.' }),
      fallback: Type.Array(Type.String(), { description: 'The models that take a call over when it fails, in order.' }),
    }),
  ),
}, { title: 'Models', description: "The models the caller's key may use (what params.model accepts)" });

export const HealthResponse = Type.Object(
  { status: Type.Literal('ok'), calls: Type.Integer({ description: 'Calls this process carries now.' }) },
  { title: 'Health', description: 'The process answers' },
);

const CheckState = Type.Object(
  {
    state: Type.Union([Type.Literal('starting'), Type.Literal('ready'), Type.Literal('degraded'), Type.Literal('failed')]),
    detail: Type.Optional(Type.String({ description: 'What is wrong.' })),
  },
  { additionalProperties: true },
);
export const ReadinessResponse = Type.Object(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
    checks: Type.Record(Type.String(), CheckState, { description: 'Each check by name: database, redis, node, turn, speech, event_loop…' }),
  },
  { title: 'Readiness', description: 'Ready (200) while no check is starting or failed; degraded still serves' },
);

export const MetricsQuery = Type.Object({
  scope: Type.Optional(Type.String({ description: "`worker`: the answering worker's figures only (under PARLEY_WORKERS); else every worker's summed." })),
});

export const OpenApiResponse = Type.Object({ openapi: Type.String() }, { additionalProperties: true, description: 'This OpenAPI 3.1 document' });

/** The schemas above the document names (components.schemas). */
export const NAMED_SCHEMAS = [ClientSecretsResponse, IceServer, IceConfigResponse, Candidate, CallsResponse, VoicesResponse, ModelsResponse, HealthResponse, ReadinessResponse];
