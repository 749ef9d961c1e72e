// The HTTP surface: Fastify with the contract's error shapes, body rules, CORS and routes, the
// readiness checks, and the behaviour of a node that is shutting down or has lost a dependency.
import { modelNames } from '../config/models.js';
import { Type } from '@sinclair/typebox';
import Fastify, { LogController, type FastifyError, type FastifyInstance, type RouteOptions } from 'fastify';
import type { Services } from '../services.js';
import { StoreUnavailable } from '../storage/unavailable.js';
import { registerCors } from './cors.js';
import { registerRateLimits } from './rateLimits.js';
import { HttpError, MESSAGES, ValidationFailure, shapeA } from './errors.js';
import { ERROR_SCHEMAS, registerOpenApi } from './openapi.js';
import { internalListenerHandler, recognizeForwarded, relayInternalUpgrades } from './nodeForwarding.js';
import { answerClientError, createHttpServer, discardUnreadBody } from './server.js';
import type { RequestListener, Server } from 'node:http';
import { CallQualitySchema, CallUsageSchema } from '../calls/callFigures.js';
import { ValidationDetail, jsonDepthOverflow, jsonInvalid, jsonTooDeep, toPydanticDetail } from '../session/validation.js';
import { callRoutes } from './routes/calls.js';
import { catalogRoutes } from './routes/catalog.js';
import { ConversationResponse, conversationRoutes } from './routes/conversations.js';
import { consoleRoutes } from './console/consoleRoutes.js';
import { demoRoutes } from './routes/demo.js';
import { clientSecretsRoutes } from './routes/clientSecrets.js';
import { iceConfigRoutes } from './routes/iceConfig.js';
import { OPENAI_NAMED_SCHEMAS, callFormConstraint, openAiRoutes } from './routes/openai.js';
import { SIP_CALLS_NAMED_SCHEMAS, sipCallsRoutes } from './routes/sipCalls.js';
import { SIP_ROUTING_NAMED_SCHEMAS, sipRoutingRoutes } from './routes/sipRouting.js';
import { realtimeSocketRoutes } from './routes/realtimeSocket.js';
import { BODY_LIMIT, callSchemas, HealthResponse, MAX_JSON_DEPTH, MetricsQuery, NAMED_SCHEMAS, OpenApiResponse, ReadinessResponse } from './schemas.js';

/** Paths a browser may call cross-origin. */
const BROWSER_PATHS = ['/v1/realtime/ice-config', '/v1/realtime/calls', '/v1/realtime/models', '/v1/realtime/voices'];
/** Answered even while the node drains for shutdown: liveness, readiness and metrics. */
const OPERATOR_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
/** Retry-After of a 503 for a node that is shutting down or has lost its database. */
const RETRY_AFTER_SECONDS = '5';

declare module 'fastify' {
  interface FastifyInstance {
    /** A second server answering like the public one, for the node-to-node listener (not listening yet). */
    createInternalServer(): Server;
  }
}

/** A request's path without its query string: what routes match, and all a log may say of a URL (a query may carry a secret). */
const pathOf = (url: string): string => url.split('?', 1)[0]!;

export interface BuildOptions {
  /** Told of every route as it is declared, before any other onRoute hook (the OpenAPI coverage test). */
  onRoute?: (route: RouteOptions) => void;
}

export async function buildApp(services: Services, logger: FastifyInstance['log'] | false = false, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { config } = services;
  const limits = { headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS };
  let handler: RequestListener | undefined;
  const app = Fastify({
    loggerInstance: logger || undefined,
    bodyLimit: BODY_LIMIT,
    serverFactory: (h) => createHttpServer(limits, (handler = h), config.TLS_CERT_FILE && config.TLS_KEY_FILE ? { cert: config.TLS_CERT_FILE, key: config.TLS_KEY_FILE } : undefined),
    clientErrorHandler: answerClientError,
    // req.ip: the connection's address, or X-Forwarded-For's client behind the proxies named here.
    trustProxy: config.TRUST_PROXY.length ? config.TRUST_PROXY : false,
    // Per-request logs would be the hot path's biggest cost; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    // While closing, requests still meet the drain hook below (503 in Shape A with Retry-After)
    // rather than Fastify's own 503.
    return503OnClosing: false,
    // No pino child logger per request (a measurable share of a token request); the few request
    // log lines name the request id themselves.
    childLoggerFactory: (logger) => logger as never,
    // The calls route has two forms on one path: Orga's JSON and OpenAI's SDP/multipart.
    routerOptions: { constraints: { callForm: callFormConstraint } },
    ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false } },
  }) as unknown as FastifyInstance;

  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  app.decorate('createInternalServer', () => {
    const internal = createHttpServer(limits, internalListenerHandler(handler!, services.nodeAuth));
    relayInternalUpgrades(internal, app.server, services.nodeAuth);
    return internal;
  });

  // First: the document collects the routes as they are declared.
  await registerOpenApi(app, {
    operatorPaths: OPERATOR_PATHS,
    namedSchemas: [...ERROR_SCHEMAS, ValidationDetail, ...NAMED_SCHEMAS, ...Object.values(callSchemas(modelNames(services.config.MODELS))), ...OPENAI_NAMED_SCHEMAS, ...SIP_ROUTING_NAMED_SCHEMAS, ...SIP_CALLS_NAMED_SCHEMAS, ConversationResponse, CallUsageSchema, CallQualitySchema],
  });

  // Bodies are JSON whatever the Content-Type says (FastAPI-era clients are not always exact);
  // an empty body is an empty object; undecodable JSON is pydantic's json_invalid, and so is JSON
  // nested deeper than any request of ours (pydantic's "recursion limit exceeded").
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (req, raw, done) => {
    const text = String(raw);
    if (text.trim() === '') return done(null, {});
    const tooDeep = jsonDepthOverflow(text, MAX_JSON_DEPTH);
    if (tooDeep >= 0) {
      req.log.warn({ reqId: req.id, path: pathOf(req.url), offset: tooDeep, maxDepth: MAX_JSON_DEPTH }, 'request body nested too deep');
      return done(new ValidationFailure([jsonTooDeep(tooDeep)]), undefined);
    }
    try {
      const value = JSON.parse(text) as unknown;
      done(null, value === null ? {} : value);
    } catch (err) {
      done(new ValidationFailure([jsonInvalid(text, err as Error)]), undefined);
    }
  });

  // Which node answered (a request passed to another node gets that one's), and which passed it on.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-parley-node', services.nodeId);
    recognizeForwarded(req, reply, done);
  });

  // A node that is shutting down answers 503 (never a refused connection) until its port closes.
  app.addHook('onRequest', (req, reply, done) => {
    if (!services.calls.isDraining || OPERATOR_PATHS.has(pathOf(req.url))) return done();
    reply
      .code(503)
      .header('retry-after', RETRY_AFTER_SECONDS)
      .send(shapeA('This server is shutting down; retry on another node.', 'shutting_down'));
  });

  // An answer sent before the body was read (413, an auth failure…): read the rest and drop it, so
  // the client, still sending, gets to read the answer.
  app.addHook('onResponse', (req, _reply, done) => {
    discardUnreadBody(req.raw);
    done();
  });

  // A request without a body has nothing to parse, whatever Content-Type it names (the server SDK
  // sends `Content-Type: application/json` with no body): forgetting the type lets Fastify skip the
  // body reader, which otherwise waits a turn of the event loop for the stream's end.
  app.addHook('onRequest', (req, _reply, done) => {
    const headers = req.raw.headers;
    if (headers['content-type'] !== undefined && headers['transfer-encoding'] === undefined) {
      const length = headers['content-length'];
      if (length === undefined || length === '0') headers['content-type'] = undefined;
    }
    done();
  });

  // A POST with no body at all is the same as an empty one.
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.method === 'POST' && req.body == null) req.body = {};
    done();
  });

  const routeTable = new RouteTable();
  app.addHook('onRoute', (route) => routeTable.add(route.url, Array.isArray(route.method) ? route.method : [route.method]));

  registerCors(app, new Set(BROWSER_PATHS), services.config.CORS_ORIGINS);
  for (const path of BROWSER_PATHS) app.options(path, { schema: { hide: true } }, async (_req, reply) => reply.code(204).send());

  app.setErrorHandler((err: FastifyError, req, reply) => {
    // Fastify closes the connection after a body error; we read the rest instead (see onResponse).
    reply.removeHeader('connection');
    if (err instanceof HttpError) return reply.code(err.statusCode).headers(err.headers).send(err.body);
    if (err instanceof ValidationFailure) return reply.code(422).send({ detail: err.detail });
    if (err instanceof StoreUnavailable) {
      req.log.warn({ reqId: req.id, path: pathOf(req.url), store: err.store, err: err.message }, 'store unavailable');
      return reply
        .code(503)
        .header('retry-after', RETRY_AFTER_SECONDS)
        .send(shapeA(`The service's ${err.store === 'redis' ? 'Redis' : 'database'} is unavailable; retry shortly.`, 'store_unavailable'));
    }
    if (err.validation) {
      return reply.code(422).send({ detail: toPydanticDetail(err.validation as never, err.validationContext ?? 'body', contextData(req, err.validationContext)) });
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413) return reply.code(413).send(shapeA(MESSAGES.bodyTooLarge));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send(shapeA(err.message));
    }
    req.log.error({ err, reqId: req.id }, 'unhandled error');
    return reply.code(500).send(shapeA('Internal server error'));
  });

  app.setNotFoundHandler((req, reply) => {
    const methods = routeTable.methodsOf(pathOf(req.url));
    if (methods.length) return reply.code(405).header('Allow', methods.join(', ')).send({ detail: 'Method Not Allowed' });
    return reply.code(404).send({ detail: 'Not Found' });
  });

  // Before the routes: it attaches the limits as they are declared.
  await registerRateLimits(app, config, services.metrics);
  await app.register(clientSecretsRoutes(services));
  await app.register(iceConfigRoutes(services));
  await app.register(callRoutes(services));
  await app.register(openAiRoutes(services));
  await app.register(sipRoutingRoutes(services));
  await app.register(sipCallsRoutes(services));
  await app.register(realtimeSocketRoutes(services));
  await app.register(catalogRoutes(services));
  await app.register(conversationRoutes(services));
  await app.register(demoRoutes(services));
  await app.register(consoleRoutes(services));
  // Liveness: the process answers. Readiness: every registered check says ready.
  const operations = { tags: ['operations'], security: [] };
  app.get('/healthz', { schema: { ...operations, summary: 'Liveness: the process answers', response: { 200: HealthResponse } } }, async () => ({
    status: 'ok',
    calls: services.calls.activeCount,
  }));
  app.get(
    '/readyz',
    { schema: { ...operations, summary: 'Readiness: 200 while no check is starting or failed', response: { 200: ReadinessResponse, 503: ReadinessResponse } } },
    async (_req, reply) => {
      const { ready, checks } = await services.readiness.evaluate();
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
    },
  );
  // Under PARLEY_WORKERS, every worker's figures summed; `?scope=worker`: the answering worker's.
  app.get<{ Querystring: { scope?: string } }>(
    '/metrics',
    {
      schema: {
        ...operations,
        summary: 'Prometheus metrics',
        querystring: MetricsQuery,
        produces: [services.metrics.registry.contentType],
        response: { 200: Type.String({ description: 'The Prometheus text exposition' }) },
      },
    },
    async (req, reply) => reply.type(services.metrics.registry.contentType).send(await services.metrics.exposition(req.query.scope === 'worker')),
  );
  app.get('/openapi.json', { schema: { ...operations, summary: 'This document (OpenAPI 3.1); rendered at /docs', response: { 200: OpenApiResponse } } }, async () =>
    app.swagger(),
  );
  return app;
}

/** Which methods each route path answers, parametric paths (`/conversations/:id`) included. */
class RouteTable {
  private readonly routes: { pattern: RegExp; methods: Set<string> }[] = [];

  add(url: string, methods: string[]): void {
    const source = url
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    const pattern = new RegExp(`^${source}$`);
    const existing = this.routes.find((r) => r.pattern.source === pattern.source);
    if (existing) for (const m of methods) existing.methods.add(m);
    else this.routes.push({ pattern, methods: new Set(methods) });
  }

  methodsOf(path: string): string[] {
    const methods = new Set<string>();
    for (const r of this.routes) if (r.pattern.test(path)) for (const m of r.methods) methods.add(m);
    return [...methods];
  }
}

function contextData(req: { body?: unknown; query?: unknown; params?: unknown; headers?: unknown }, context?: string): unknown {
  switch (context) {
    case 'querystring':
      return req.query;
    case 'params':
      return req.params;
    case 'headers':
      return req.headers;
    default:
      return req.body;
  }
}
