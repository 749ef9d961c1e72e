// OpenAI's Realtime WebSocket front door: `GET /v1/realtime?model=…` upgraded to a WebSocket that
// speaks the same event protocol as the `oai-events` data channel, with audio inside events (see
// calls/websocket). Credentials and admission are settled before the upgrade, so a refusal is an
// ordinary HTTP answer (401, 429, 503) the client can read.
import websocket from '@fastify/websocket';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TokenClaims } from '../../auth/tokens.js';
import { looksLikeApiKey } from '../../config/apiKeyFormat.js';
import { openCall } from '../../calls/door.js';
import { MAX_AUDIO_MESSAGE_BYTES } from '../../calls/protocol/message.js';
import { applyOpenAiSession, openAiDefaultSession } from '../../calls/protocol/openaiSession.js';
import { websocketChannel } from '../../calls/websocket/websocketChannel.js';
import { WebSocketTransport } from '../../calls/websocket/websocketTransport.js';
import type { Session } from '../../session/session.js';
import type { Services } from '../../services.js';
import { randomId } from '../../system/ids.js';
import { CLIENT_SECRET_PREFIX, bearerCredential, verifyApiKey, verifyToken } from '../auth.js';
import { httpRefusal } from '../doorRefusals.js';
import { openAiError } from '../errors.js';
import { connectToNode, opened, relaySideband, relayWebSocket } from '../websocketRelay.js';
import type WebSocket from 'ws';
import { liveCallOwner } from './openai.js';

/**
 * The largest message read at all: twice the largest the protocol takes (OpenAI's 15 MiB append), so
 * a message over that is answered with an error event; one past this closes the socket (1009).
 */
const MAX_PAYLOAD_BYTES = 2 * MAX_AUDIO_MESSAGE_BYTES;

/** The browser form's credential: a subprotocol `openai-insecure-api-key.<secret>`. */
const KEY_SUBPROTOCOL = 'openai-insecure-api-key.';

declare module 'fastify' {
  interface FastifyRequest {
    /** The session's own transport, admitted before the upgrade; or the live call a sideband connection attaches to. */
    socketTransport?: WebSocketTransport;
    /** The session another node took (this one full or loaded): the connection is relayed there. */
    relayedSession?: WebSocket;
    sideband?: { callId: string; apiKeyId: string; carriedBy?: string };
  }
}

const badCredential = () => openAiError(401, 'invalid_api_key', 'Incorrect API key provided or the API key is inactive.');

/** Who is calling: the server API key or a token (ek_ client secret) in the header, or an ek_ secret in a subprotocol. */
async function authenticate(services: Services, req: FastifyRequest): Promise<{ apiKeyId: string; token: TokenClaims | null }> {
  // Azure's clients send the key in an `api-key` header.
  const header = bearerCredential(req.headers.authorization) ?? (typeof req.headers['api-key'] === 'string' ? req.headers['api-key'] : null);
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const fromProtocol = offered.find((p) => p.startsWith(KEY_SUBPROTOCOL))?.slice(KEY_SUBPROTOCOL.length);
  const credential = header ?? fromProtocol;
  if (!credential) throw badCredential();
  if (looksLikeApiKey(credential)) {
    // A permanent key in a subprotocol is one a browser page holds: refused, as OpenAI does.
    if (!header) throw openAiError(401, 'invalid_api_key', 'An API key may not be offered as a subprotocol; use an ephemeral client secret (ek_…) there.');
    const apiKeyId = await verifyApiKey(services, credential);
    if (!apiKeyId) throw badCredential();
    return { apiKeyId, token: null };
  }
  if (!header && !credential.startsWith(CLIENT_SECRET_PREFIX)) throw badCredential();
  const token = await verifyToken(services, credential);
  if (!token) throw badCredential();
  return { apiKeyId: token.sub, token };
}

export const realtimeSocketRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  await app.register(websocket, {
    options: {
      maxPayload: MAX_PAYLOAD_BYTES,
      perMessageDeflate: false,
      // OpenAI's browser form offers `realtime` beside its credential; the answer names it.
      handleProtocols: (protocols) => (protocols.has('realtime') ? 'realtime' : false),
    },
  });

  // Azure OpenAI's form of the same door (`/openai/realtime?api-version=…&deployment=…`, the key in an
  // `api-key` header), as Azure's clients (rt-client) open it: the beta dialect, the deployment as the model.
  for (const [path, summary] of [
    ['/v1/realtime', "OpenAI's Realtime over WebSocket: a session speaking the realtime events (audio inside them), or with call_id a sideband connection to a live call"],
    ['/openai/realtime', "Azure OpenAI's form of the Realtime WebSocket (api-version, deployment as the model, the key in an api-key header): a session in the beta dialect"],
  ] as const) app.get<{ Querystring: { model?: string; call_id?: string; intent?: string; deployment?: string; 'api-version'?: string } }>(
    path,
    {
      websocket: true,
      schema: {
        summary,
        tags: ['openai'],
        querystring: {
          type: 'object',
          properties: {
            model: { type: 'string', maxLength: 128 },
            call_id: { type: 'string', maxLength: 64 },
            // `transcription`: a transcription session (the beta's way to open one; GA clients may also say so in session.update).
            intent: { type: 'string', maxLength: 32 },
            ...(path === '/openai/realtime' ? { deployment: { type: 'string', maxLength: 128 }, 'api-version': { type: 'string', maxLength: 64 } } : {}),
          },
        },
      },
      // Before the upgrade: whatever refuses the session answers in HTTP. Credentials first; the
      // calls-per-token rate limit (rateLimits.ts) comes between them and the session's admission.
      preValidation: async (req) => {
        // A plain GET would be admitted as a session that never connects: told what this route is instead.
        if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
          throw openAiError(426, 'upgrade_required', 'This route is a WebSocket: connect with a WebSocket client (wss://…/v1/realtime?model=…).', null, { Upgrade: 'websocket' });
        }
        const { apiKeyId, token } = await authenticate(services, req);
        req.apiKeyId = apiKeyId;
        if (token) req.token = token;
      },
      preHandler: async (req) => {
        const apiKeyId = req.apiKeyId!;
        const token = req.token ?? null;
        if (req.query.call_id !== undefined && path === '/v1/realtime') return await attachingSideband(req, apiKeyId, token);
        let session: Session = openAiDefaultSession(services.sessionDefaults);
        const minted = token ? await services.clientSecretSessions.get(token.jti) : undefined;
        if (minted) session = { ...session, ...(minted as Session) };
        const azure = path === '/openai/realtime';
        const model = req.query.model ?? (azure ? req.query.deployment : undefined);
        if (model) session = { ...session, model };
        if (req.query.intent === 'transcription' && session.kind !== 'transcription') {
          const applied = applyOpenAiSession(session, { type: 'transcription' }, services.sessionDefaults.turnDetection);
          if (applied.ok) session = applied.session;
        }
        const transport = new WebSocketTransport(services.config.WEBSOCKET_MAX_UNSENT_BYTES, services.config.WEBSOCKET_AUDIO_LEAD_MS);
        // The beta dialect, asked for by header (server clients) or subprotocol (browsers).
        const beta = azure || /realtime=v1/.test(String(req.headers['openai-beta'] ?? '')) || String(req.headers['sec-websocket-protocol'] ?? '').includes('openai-beta.realtime-v1');
        const result = await openCall(services.calls, {
          // An API key's session has no token: it is counted under the key, and its own id.
          request: { apiKeyId, tokenId: token?.jti ?? randomId('ws_'), endUser: token?.end_user ?? null, session, protocol: azure ? 'openai-azure' : beta ? 'openai-beta' : 'openai' },
          open: () => ({ transport, accept: async () => undefined }),
          ...(req.forwardedFromNode ? {} : { elsewhere: () => sessionOnAnotherNode(req) }),
        });
        if (result.ok) return void (req.socketTransport = transport);
        const { refusal } = result;
        if ((refusal.kind === 'full' || refusal.kind === 'loaded') && refusal.placed) return void (req.relayedSession = refusal.placed);
        // Before the upgrade: answered in HTTP, as OpenAI's calls routes answer.
        throw httpRefusal('openai', refusal, services.metrics);
      },
    },
    (socket, req) => {
      if (req.socketTransport) return req.socketTransport.bind(socket);
      const maxUnsent = services.config.WEBSOCKET_MAX_UNSENT_BYTES;
      if (req.relayedSession) return relayWebSocket(socket, req.relayedSession, maxUnsent);
      const { callId, apiKeyId, carriedBy } = req.sideband!;
      if (carriedBy) return relaySideband(socket, { nodeUrl: carriedBy, path: req.url, headers: { authorization: String(req.headers.authorization) }, auth: services.nodeAuth }, maxUnsent);
      // A sideband reader that stops reading is cut off; the call goes on.
      const channel = websocketChannel(socket, 'sideband', services.config.WEBSOCKET_MAX_UNSENT_BYTES, () => socket.terminate());
      if (!services.calls.attachControl(callId, apiKeyId, channel)) socket.close(1000, 'call_ended');
    },
  );

  /**
   * The session opened on the least-loaded other node with room that takes it (the client's
   * credentials, dialect and subprotocols passed on), or undefined when none does. A caller at its
   * own limit never gets here: that is answered 429 by this node.
   */
  async function sessionOnAnotherNode(req: FastifyRequest): Promise<WebSocket | undefined> {
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'openai-beta']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name] as string;
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
    return services.placement.elsewhere({ door: 'websocket', log: req.log }, async (node) => ({
      status: 101,
      value: await opened(connectToNode({ nodeUrl: node.url!, path: req.url, headers, protocols, auth: services.nodeAuth })),
    }));
  }

  /**
   * A sideband connection: the server API key of the call's owner, and the call live on this node —
   * or on another, whose node-to-node listener the connection is relayed to (once: a relayed one is
   * never passed on again).
   */
  async function attachingSideband(req: FastifyRequest<{ Querystring: { call_id?: string } }>, apiKeyId: string, token: TokenClaims | null): Promise<void> {
    if (token) throw openAiError(401, 'invalid_api_key', "A call's sideband connection needs the server API key of the call's owner, not a client secret.");
    const callId = req.query.call_id!;
    const call = services.calls.get(callId);
    if (call && call.apiKeyId === apiKeyId) return void (req.sideband = { callId, apiKeyId });
    const carriedBy = call || req.forwardedFromNode || !req.headers.authorization ? undefined : await liveCallOwner(services, callId, apiKeyId);
    // Another key's call is indistinguishable from a missing one.
    if (!carriedBy) throw openAiError(404, 'call_not_found', `No live call with id '${callId}'.`, 'call_id');
    req.sideband = { callId, apiKeyId, carriedBy };
  }
};
