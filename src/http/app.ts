// The HTTP surface: Fastify with the contract's error shapes, body rules, CORS and routes.
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyError, type FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { registerCors } from './cors.js';
import { HttpError, MESSAGES, OpenAiErrorBody, ShapeA, ShapeB, ValidationFailure, shapeA } from './errors.js';
import { jsonInvalid, toPydanticDetail } from '../session/validation.js';
import { callRoutes } from './routes/calls.js';
import { catalogRoutes } from './routes/catalog.js';
import { conversationRoutes } from './routes/conversations.js';
import { demoRoutes } from './routes/demo.js';
import { clientSecretsRoutes } from './routes/clientSecrets.js';
import { iceConfigRoutes } from './routes/iceConfig.js';
import { callFormConstraint, openAiRoutes } from './routes/openai.js';
import { BODY_LIMIT } from './schemas.js';

/** Paths a browser may call cross-origin. */
const BROWSER_PATHS = ['/v1/realtime/ice-config', '/v1/realtime/calls', '/v1/realtime/models', '/v1/realtime/voices'];

export async function buildApp(services: Services, logger: FastifyInstance['log'] | false = false): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger || undefined,
    bodyLimit: BODY_LIMIT,
    // Per-request logs would be the hot path's biggest cost; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    // While draining, new requests get 503 rather than hanging.
    return503OnClosing: true,
    // No pino child logger per request (a measurable share of a token request); the few request
    // log lines name the request id themselves.
    childLoggerFactory: (logger) => logger as never,
    // The calls route has two forms on one path: Orga's JSON and OpenAI's SDP/multipart.
    routerOptions: { constraints: { callForm: callFormConstraint } },
    ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false } },
  }) as unknown as FastifyInstance;

  await app.register(swagger, {
    openapi: {
      info: { title: 'Parley realtime session API', version: '1.0.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  app.addSchema(ShapeA);
  app.addSchema(ShapeB);
  app.addSchema(OpenAiErrorBody);

  // Bodies are JSON whatever the Content-Type says (FastAPI-era clients are not always exact);
  // an empty body is an empty object; undecodable JSON is pydantic's json_invalid.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_req, raw, done) => {
    const text = String(raw);
    if (text.trim() === '') return done(null, {});
    try {
      const value = JSON.parse(text) as unknown;
      done(null, value === null ? {} : value);
    } catch (err) {
      done(new ValidationFailure([jsonInvalid(text, err as Error)]), undefined);
    }
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

  const knownPaths = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = knownPaths.get(route.url) ?? new Set<string>();
    for (const m of methods) set.add(m);
    knownPaths.set(route.url, set);
  });

  registerCors(app, new Set(BROWSER_PATHS), services.config.CORS_ORIGINS);
  for (const path of BROWSER_PATHS) app.options(path, { schema: { hide: true } }, async (_req, reply) => reply.code(204).send());

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof HttpError) return reply.code(err.statusCode).headers(err.headers).send(err.body);
    if (err instanceof ValidationFailure) return reply.code(422).send({ detail: err.detail });
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
    const methods = knownPaths.get(req.url.split('?', 1)[0]!);
    if (methods) return reply.code(405).header('Allow', [...methods].join(', ')).send({ detail: 'Method Not Allowed' });
    return reply.code(404).send({ detail: 'Not Found' });
  });

  await app.register(clientSecretsRoutes(services));
  await app.register(iceConfigRoutes(services));
  await app.register(callRoutes(services));
  await app.register(openAiRoutes(services));
  await app.register(catalogRoutes(services));
  await app.register(conversationRoutes(services));
  await app.register(demoRoutes(services));
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok', calls: services.calls.activeCount }));
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) =>
    reply.type(services.metrics.registry.contentType).send(await services.metrics.registry.metrics()),
  );
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
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
