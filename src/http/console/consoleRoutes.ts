// The operator console at /console (on only with ADMIN_TOKEN): its page, its login, and the data
// routes under /console/api the page reads — this node's live calls, every key's conversations with
// their transcripts, the API keys, and the webhooks (endpoints without secrets, latest deliveries). Every data route wants the session cookie (401 without);
// every request that changes something also wants the X-Parley-Console header, which a form or a
// link from another site cannot send (with SameSite=Strict, the guard against cross-site requests).
// The routes are left out of the OpenAPI document: they are the page's, not the API.
import { round } from '../../calls/callFigures.js';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';
import { HttpError, shapeA } from '../errors.js';
import { loadPageFiles } from '../pageFiles.js';
import { rateLimited } from '../rateLimits.js';
import { sendRecording } from '../routes/conversations.js';
import { COOKIE_PATH, ConsoleSessions, SESSION_COOKIE, cookieValue, sessionCookie } from './consoleSessions.js';
import {
  ApiKeysResponse,
  ConversationDetail,
  ConversationsPage,
  CreatedApiKey,
  LiveCallsResponse,
  RevokedApiKey,
  WebhooksResponse,
  apiKeyView,
  conversationDetail,
  conversationSummary,
  decodeCursor,
  encodeCursor,
  liveCallView,
  webhookDeliveryView,
  webhookEndpointView,
} from './consoleViews.js';

const PUBLIC_DIR = new URL('./public/', import.meta.url);
/** Sent by the page's own requests that change something (see above). */
export const CONSOLE_REQUEST_HEADER = 'x-parley-console';
/** Login attempts one client address may make a minute. */
const LOGINS_PER_MINUTE = 10;
const DEFAULT_PAGE_SIZE = 25;
/** Webhook deliveries the console shows, newest first. */
const RECENT_DELIVERIES = 50;

// Only its own files, and only this origin; recordings play from this origin too.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; media-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const hidden = { hide: true };
const ErrorBody = { $ref: 'ShapeA#' };
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const consoleRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  const adminToken = services.config.ADMIN_TOKEN;
  if (!adminToken) return;
  const sessions = new ConsoleSessions(adminToken);
  const files = loadPageFiles(PUBLIC_DIR);
  const sendFile = (reply: FastifyReply, name: string) => reply.headers(PAGE_HEADERS).type(files.get(name)!.type).send(files.get(name)!.body);
  const sessionOf = (req: FastifyRequest) => sessions.sessionOf(cookieValue(req.headers.cookie, SESSION_COOKIE));
  /** A signed, unexpired session that was not logged out (on any node). */
  const loggedIn = async (req: FastifyRequest) => {
    const session = sessionOf(req);
    return session !== undefined && !(await services.consoleLogouts.has(session.id));
  };

  /** The data routes' guard: a session, and for a change, the page's header. */
  const requireSession = async (req: FastifyRequest) => {
    if (!(await loggedIn(req))) throw new HttpError(401, shapeA('Log in to the console first.', 'console_login_required'));
    if (req.method !== 'GET' && req.method !== 'HEAD') requirePageRequest(req);
  };

  app.get(COOKIE_PATH, { schema: hidden }, async (req, reply) => ((await loggedIn(req)) ? sendFile(reply, 'index.html') : reply.redirect(`${COOKIE_PATH}/login`)));
  app.get(`${COOKIE_PATH}/login`, { schema: hidden }, async (_req, reply) => sendFile(reply, 'login.html'));
  for (const name of files.keys()) {
    if (!name.endsWith('.html')) app.get(`${COOKIE_PATH}/assets/${name}`, { schema: hidden }, async (_req, reply) => sendFile(reply, name));
  }

  app.post<{ Body: { token: string } }>(
    `${COOKIE_PATH}/login`,
    { schema: { ...hidden, body: Type.Object({ token: Type.String({ maxLength: 1024 }) }), response: { 204: Type.Null(), 401: ErrorBody, 403: ErrorBody, 429: ErrorBody } } },
    async (req, reply) => {
      requirePageRequest(req);
      const attempt = await app.rateLimits.hit('console-login-ip', req.ip, LOGINS_PER_MINUTE, 60_000);
      if (!attempt.allowed) throw rateLimited('orga', `Too many console logins from this address; try again in ${attempt.retryAfterSeconds} s.`, attempt.retryAfterSeconds);
      if (!sessions.isAdminToken(req.body.token)) {
        req.log.warn({ reqId: req.id, ip: req.ip }, 'console: login refused');
        throw new HttpError(401, shapeA('That is not the admin token.', 'console_login_refused'));
      }
      req.log.info({ reqId: req.id, ip: req.ip }, 'console: logged in');
      return reply.code(204).header('set-cookie', sessionCookie(sessions.issue(), req.protocol === 'https')).send();
    },
  );

  app.post(`${COOKIE_PATH}/logout`, { schema: { ...hidden, response: { 204: Type.Null(), 403: ErrorBody } } }, async (req, reply) => {
    requirePageRequest(req);
    // Ended for every node, not only forgotten by this browser: a copy of the cookie stops working too.
    const session = sessionOf(req);
    if (session) await services.consoleLogouts.add(session.id, session.expiresAt);
    req.log.info({ reqId: req.id, ip: req.ip }, 'console: logged out');
    return reply.code(204).header('set-cookie', sessionCookie('', req.protocol === 'https')).send();
  });

  const api = `${COOKIE_PATH}/api`;
  app.get(api + '/calls', { onRequest: requireSession, schema: { ...hidden, response: { 200: LiveCallsResponse, 401: ErrorBody } } }, async () => {
    const now = Date.now();
    return { node_id: services.nodeId, calls: [...services.calls.liveCalls()].map((call) => liveCallView(call, now)) };
  });

  app.get<{ Querystring: { limit?: string; after?: string } }>(
    api + '/conversations',
    {
      onRequest: requireSession,
      schema: {
        ...hidden,
        querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$' })), after: Type.Optional(Type.String({ maxLength: 200 })) }),
        response: { 200: ConversationsPage, 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (req) => {
      const limit = req.query.limit ? Number(req.query.limit) : DEFAULT_PAGE_SIZE;
      const after = req.query.after === undefined ? undefined : decodeCursor(req.query.after);
      if (req.query.after !== undefined && !after) throw new HttpError(400, shapeA('`after` is not a page position this console gave.', 'invalid_cursor'));
      // One more than asked: whether a next page exists.
      const records = await services.conversations.list(limit + 1, after);
      const page = records.slice(0, limit);
      return { data: page.map(conversationSummary), next: records.length > limit ? encodeCursor(page[page.length - 1]!) : null };
    },
  );

  app.get<{ Params: { id: string } }>(
    api + '/conversations/:id',
    { onRequest: requireSession, schema: { ...hidden, params: IdParams, response: { 200: ConversationDetail, 401: ErrorBody, 404: ErrorBody } } },
    async (req) => {
      const record = await services.conversations.get(req.params.id);
      if (!record) throw new HttpError(404, shapeA('No such conversation.'));
      return conversationDetail(record, await services.conversations.turns(record.threadId));
    },
  );

  // The page's player: any key's recording, served as the API serves it to its owner (byte ranges for seeking).
  app.get<{ Params: { id: string } }>(
    api + '/conversations/:id/recording',
    { onRequest: requireSession, schema: { ...hidden, params: IdParams } },
    async (req, reply) => {
      const record = await services.conversations.get(req.params.id);
      if (!record) throw new HttpError(404, shapeA('No such conversation.'));
      return sendRecording(services, record, req, reply);
    },
  );

  app.get(api + '/keys', { onRequest: requireSession, schema: { ...hidden, response: { 200: ApiKeysResponse, 401: ErrorBody } } }, async () => {
    const since = new Date(Date.now() - 30 * 86_400_000).toISOString();
    const [keys, usage] = await Promise.all([services.apiKeys.list(), services.conversations.usageByKey(since)]);
    const none = { calls: 0, input_tokens: 0, output_tokens: 0, caller_audio_s: 0, agent_audio_s: 0 };
    return { data: keys.map((k) => ({ ...apiKeyView(k), usage_30d: { ...none, ...usage.get(k.id), caller_audio_s: round(usage.get(k.id)?.caller_audio_s ?? 0), agent_audio_s: round(usage.get(k.id)?.agent_audio_s ?? 0) } })) };
  });

  app.post<{ Body: { name: string } }>(
    api + '/keys',
    {
      onRequest: requireSession,
      schema: { ...hidden, body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }), response: { 201: CreatedApiKey, 401: ErrorBody, 403: ErrorBody } },
    },
    async (req, reply) => {
      const { key, record } = await services.apiKeys.create(req.body.name);
      req.log.info({ reqId: req.id, apiKey: record.id }, 'console: API key created');
      return reply.code(201).header('cache-control', 'no-store').send({ ...apiKeyView(record), key });
    },
  );

  app.get(api + '/webhooks', { onRequest: requireSession, schema: { ...hidden, response: { 200: WebhooksResponse, 401: ErrorBody } } }, async () => ({
    endpoints: (await services.webhookEndpoints.list()).map(webhookEndpointView),
    deliveries: (await services.webhookOutbox.list({ limit: RECENT_DELIVERIES })).map(webhookDeliveryView),
  }));

  app.post<{ Params: { id: string } }>(
    api + '/keys/:id/revoke',
    { onRequest: requireSession, schema: { ...hidden, params: IdParams, response: { 200: RevokedApiKey, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody } } },
    async (req) => {
      const { id } = req.params;
      const outcome = await services.apiKeys.revoke(id);
      if (outcome === 'unknown') throw new HttpError(404, shapeA('No such API key.'));
      // As the CLI does: this node forgets the key now, the others when Redis tells them (or within
      // KEY_CACHE_TTL_MS); live calls under it end at the revocation watcher's next look.
      services.keyCache.invalidate();
      await services.bus.publish({ kind: 'key-revoked', id }).catch((err: Error) => req.log.warn({ reqId: req.id, err: err.message }, 'console: other nodes not told of a revoked key'));
      req.log.info({ reqId: req.id, apiKey: id, outcome }, 'console: API key revoked');
      return { id, outcome };
    },
  );
};

/** A request that changes something must come from the console's own page (see the top). */
function requirePageRequest(req: FastifyRequest): void {
  if (req.headers[CONSOLE_REQUEST_HEADER] !== '1') {
    throw new HttpError(403, shapeA(`The console's changes need the ${CONSOLE_REQUEST_HEADER}: 1 header (its page sends it).`, 'console_header_required'));
  }
}
