// The OpenAPI 3.1 document (GET /openapi.json) and its rendering (GET /docs), generated from the
// routes' TypeBox schemas. What the routes' own schemas cannot say is derived here from the code that
// does it: the answers every route shares (413 and 422 from the body parser, 503 while draining or
// without a store, the rate limits' 429 with Retry-After), and the calls route's two forms, which
// are two Fastify routes on one path told apart by Content-Type but one operation in the document.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { OpenAPIV3_1 } from 'openapi-types';
import { WEBHOOK_PAYLOADS } from '../webhooks/payloads.js';
import { OpenAiErrorBody, ShapeA, ShapeB } from './errors.js';
import { rateLimitForm } from './rateLimits.js';

/** Body of the fallback answers: 404 for an unknown path, 405 (with Allow) for a known path's other methods. */
export const DetailError = Type.Object({ detail: Type.String() }, { $id: 'DetailError', description: 'Unknown path (404) or method (405)' });

/** The answers of a WebSocket upgrade route: the switch, or a refusal in OpenAI's error object. */
const WEBSOCKET_ANSWERS: Record<string, Json> = {
  101: { description: 'Switching Protocols: the session runs on the WebSocket', type: 'null' },
  401: { ...OpenAiErrorBody, description: 'No credential, a wrong one, or a permanent key offered as a subprotocol' },
  404: { ...OpenAiErrorBody, description: 'call_id names no live call of this key on this node' },
  426: { ...OpenAiErrorBody, description: 'Not a WebSocket upgrade request' },
  429: { ...OpenAiErrorBody, description: "Over one of the caller's own call limits" },
  503: { ...OpenAiErrorBody, description: 'The node is full or shutting down (Retry-After)' },
};

/** Where the document is rendered. */
export const DOCS_PREFIX = '/docs';

/** Bodies a route reads itself, with no validator (route config), so the document can still show them. */
export interface OpenApiRouteConfig {
  openApiBody?: Record<string, TSchema>;
  /** Headers of an answer, by status (a response schema describes only the body). */
  openApiHeaders?: Record<string, Record<string, TSchema>>;
}

declare module 'fastify' {
  interface FastifyContextConfig extends OpenApiRouteConfig {}
}

export interface OpenApiFacts {
  /** Paths answered even while draining, with no store and no credential: the operator's. */
  operatorPaths: ReadonlySet<string>;
  /**
   * Schemas the document names in components.schemas, by $id or title; the routes use them inline
   * (a validator has no use for the names), the document refers to them.
   */
  namedSchemas: TSchema[];
}

/** The errors' shapes, named wherever they appear. */
export const ERROR_SCHEMAS: TSchema[] = [ShapeA, ShapeB, OpenAiErrorBody, DetailError];

const nameOf = (schema: TSchema): string => String(schema.$id ?? schema.title);

/** `value` with every named schema within it a reference to its component (`value` itself kept when `keepTop`). */
function withRefs(value: unknown, names: ReadonlySet<string>, keepTop: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => withRefs(v, names, false));
  if (value === null || typeof value !== 'object') return value;
  const json = value as Json;
  const name = typeof json.$id === 'string' ? json.$id : typeof json.title === 'string' ? json.title : undefined;
  if (!keepTop && name && names.has(name)) return { $ref: `${name}#` };
  return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, withRefs(v, names, false)]));
}

type Json = Record<string, unknown>;

/**
 * The events Parley POSTs to webhook endpoints (OpenAPI 3.1 `webhooks`), from the schemas the
 * payloads are typed by; named schemas within them (usage, quality) refer to their components.
 */
function webhookOperations(names: ReadonlySet<string>): Record<string, OpenAPIV3_1.PathItemObject> {
  const toComponents = (value: unknown): any => {
    if (Array.isArray(value)) return value.map(toComponents);
    if (value === null || typeof value !== 'object') return value;
    const ref = (value as Json).$ref;
    if (typeof ref === 'string' && ref.endsWith('#')) return { $ref: `#/components/schemas/${ref.slice(0, -1)}` };
    return Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, toComponents(v)]));
  };
  const signatureHeader = (name: string, description: string): OpenAPIV3_1.ParameterObject => ({ name, in: 'header', required: true, schema: { type: 'string' }, description });
  return Object.fromEntries(
    Object.entries(WEBHOOK_PAYLOADS).map(([type, { data, description }]) => [
      type,
      {
        post: {
          summary: type,
          description: `${description} Signed per Standard Webhooks; the same webhook-id on every retry.`,
          parameters: [
            signatureHeader('webhook-id', "The event's id (evt_…): deduplicate on it"),
            signatureHeader('webhook-timestamp', 'Unix seconds when this attempt was signed'),
            signatureHeader('webhook-signature', 'v1,<base64 HMAC-SHA256 of id.timestamp.body> with the endpoint secret (whsec_…)'),
          ],
          requestBody: {
            required: true,
            content: {
              [JSON_TYPE]: {
                schema: toComponents(
                  withRefs(
                    {
                      type: 'object',
                      required: ['object', 'id', 'type', 'created_at', 'data'],
                      properties: { object: { const: 'event' }, id: { type: 'string' }, type: { const: type }, created_at: { type: 'integer' }, data },
                    },
                    names,
                    true,
                  ),
                ),
              },
            },
          },
          responses: {
            '2XX': { description: 'Delivered' },
            '410': { description: 'The endpoint is disabled: no more deliveries to it' },
            default: { description: 'Retried with exponential backoff and jitter for a day' },
          },
        },
      },
    ]),
  );
}
/** A route's schema as @fastify/swagger reads it. */
type RouteSchema = Json & { body?: Json; response?: Record<string, Json>; consumes?: string[]; produces?: string[] };

const JSON_TYPE = 'application/json';
const ref = (schema: { $id?: string }): Json => ({ $ref: `${schema.$id}#` });

const RETRY_AFTER = {
  'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying.' },
};

// Page assets come from this server only; swagger-ui's own default allows https: styles and fonts
// and upgrade-insecure-requests (which breaks a plain-HTTP bind). No inline scripts in its page;
// its bundle adds an inline style element, hence 'unsafe-inline' for styles (styles only).
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/** Registers the document's generator (before any route: it collects them as they are declared) and /docs. */
export async function registerOpenApi(app: FastifyInstance, facts: OpenApiFacts): Promise<void> {
  // Routes by method and path: the calls route's forms are found through their siblings.
  const byOperation = new Map<string, RouteOptions[]>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      const key = `${method} ${route.url}`;
      byOperation.set(key, [...(byOperation.get(key) ?? []), route]);
    }
  });

  const names = new Set(facts.namedSchemas.map(nameOf));
  const document = (route: RouteOptions): RouteSchema => withSharedAnswers(route, facts);
  const named = (schema: RouteSchema): RouteSchema => withRefs(schema, names, true) as RouteSchema;

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley realtime session API',
        version: '1.0.0',
        description:
          'Orga-compatible and OpenAI-compatible realtime voice sessions over WebRTC. Every path answers 404 ' +
          '(`DetailError`) when unknown and 405 (`DetailError`, with `Allow`) for a method it does not have; a request ' +
          'that is not valid HTTP gets 400, headers too large 431, a request too slow 408 (Shape A).',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'A server API key or an ephemeral token, as each operation says.' },
        },
        responses: {
          NotFound: { description: 'No such path', content: { [JSON_TYPE]: { schema: { $ref: '#/components/schemas/DetailError' } } } },
          MethodNotAllowed: {
            description: 'The path exists; the methods it has are in Allow',
            headers: { Allow: { schema: { type: 'string' } } },
            content: { [JSON_TYPE]: { schema: { $ref: '#/components/schemas/DetailError' } } },
          },
        },
      },
      security: [{ bearer: [] }],
      webhooks: webhookOperations(names),
      tags: [
        { name: 'realtime', description: "Orga's contract: tokens, ICE servers, calls, catalogue, conversations" },
        { name: 'openai', description: "OpenAI's Realtime GA over WebRTC: client_secrets, calls (SDP), hangup" },
        { name: 'operations', description: 'Liveness, readiness, metrics and this document: no credential' },
      ],
    },
    // Shared schemas keep their $id as their name in components.schemas (the default is def-0, def-1…).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => {
      // @fastify/websocket hides its routes; the upgrade is an operation like any other, its refusals HTTP answers.
      if ((route as { websocket?: boolean }).websocket) {
        const { hide: _hide, ...shown } = (schema ?? {}) as RouteSchema;
        return { schema: named(document({ ...route, schema: { ...shown, response: { ...WEBSOCKET_ANSWERS, ...(shown.response ?? {}) } } } as RouteOptions)), url };
      }
      const siblings = byOperation.get(`${[route.method].flat()[0]} ${route.url}`) ?? [route];
      if (siblings.length < 2 || schema?.hide) return { schema: schema && named(document(route)), url };
      // One operation for routes that share a method and path: the first carries them all.
      if (siblings[0] !== route) return { schema: { hide: true }, url };
      return { schema: named(mergeForms(siblings.map((r) => ({ route: r, schema: document(r) })))), url };
    },
  });
  for (const schema of facts.namedSchemas) app.addSchema({ ...(withRefs(schema, names, true) as Json), $id: nameOf(schema) });

  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: DOCS_CSP,
    // swagger-ui loads this server's document; no validator badge from swagger.io.
    uiConfig: { validatorUrl: null },
  });
}

/** The route's schema with the answers the app gives on every route of its kind. */
function withSharedAnswers(route: RouteOptions, facts: OpenApiFacts): RouteSchema {
  const { produces: _produces, ...schema } = route.schema as RouteSchema;
  const config = route.config as OpenApiRouteConfig | undefined;
  const response = answers(route.schema as RouteSchema);
  const methods = [route.method].flat();
  const add = (status: string, body: Json, description: string) => {
    response[status] = joinAnswers(response[status], { description, content: { [JSON_TYPE]: { schema: body } } });
  };

  if (config?.openApiBody) {
    schema.body = { content: Object.fromEntries(Object.entries(config.openApiBody).map(([type, s]) => [type, { schema: s }])) };
  }
  const readsJson = methods.includes('POST') && !config?.openApiBody;
  if (methods.includes('POST')) add('413', ref(ShapeA), 'The body is larger than 256 KiB');
  if (readsJson || schema.params || schema.querystring) add('422', ref(ShapeB), 'The request does not validate (or its body is not JSON)');
  const limited = rateLimitForm(route);
  if (limited) add('429', ref(limited === 'openai' ? OpenAiErrorBody : ShapeA), 'Over a rate limit or a concurrent-call limit');
  if (!facts.operatorPaths.has(route.url)) add('503', ref(ShapeA), 'This node is shutting down, or its database or Redis is unavailable');
  for (const status of ['429', '503']) if (response[status]) response[status] = { ...asAnswer(response[status]!), headers: RETRY_AFTER };
  for (const [status, headers] of Object.entries(config?.openApiHeaders ?? {})) {
    if (response[status]) response[status] = { ...asAnswer(response[status]!), headers };
  }
  schema.response = response;
  return schema;
}

/** A response entry as {description, content} (a bare schema is JSON). */
function asAnswer(entry: Json): Json {
  if (entry.content) return entry;
  const description = entry.description ?? (entry.$ref ? SHARED_DESCRIPTIONS.get(String(entry.$ref)) : undefined);
  return { description: description ?? '', content: { [JSON_TYPE]: { schema: entry } } };
}

/** What a shared error schema is, as a response's description. */
const SHARED_DESCRIPTIONS = new Map([ShapeA, ShapeB, OpenAiErrorBody, DetailError].map((s) => [`${s.$id}#`, String(s.description)]));

/** Two answers of one status: their content types side by side, bodies of one type as alternatives. */
function joinAnswers(a: Json | undefined, b: Json): Json {
  if (!a) return b;
  const left = asAnswer(a);
  const right = asAnswer(b);
  const content: Record<string, { schema: Json }> = { ...(left.content as Record<string, { schema: Json }>) };
  for (const [type, media] of Object.entries(right.content as Record<string, { schema: Json }>)) {
    const existing = content[type];
    if (!existing) content[type] = media;
    else {
      const options = [existing.schema, media.schema].flatMap((o) => (o.anyOf as Json[] | undefined) ?? [o]);
      const distinct = options.filter((o, i) => options.findIndex((p) => JSON.stringify(p) === JSON.stringify(o)) === i);
      content[type] = { schema: distinct.length === 1 ? distinct[0]! : { anyOf: distinct } };
    }
  }
  // A status's own description ("over a rate limit") says more than its body schema's ("error object").
  const generic = new Set(SHARED_DESCRIPTIONS.values());
  const all = [left.description, right.description].flatMap((d) => (typeof d === 'string' && d !== '' ? d.split('; ') : []));
  const specific = all.filter((d) => !generic.has(d));
  return { ...left, ...right, description: [...new Set(specific.length ? specific : all)].join('; '), content };
}

/** The request bodies of a route by content type. */
function bodies(schema: RouteSchema): Record<string, Json> {
  if (!schema.body) return {};
  if (schema.body.content) return schema.body.content as Record<string, Json>;
  return Object.fromEntries((schema.consumes?.length ? schema.consumes : [JSON_TYPE]).map((type) => [type, { schema: schema.body }]));
}

/** The response entries of a route with its `produces` content type(s) made explicit. */
function answers(schema: RouteSchema): Record<string, Json> {
  const produces = schema.produces ?? [];
  return Object.fromEntries(
    Object.entries(schema.response ?? {}).map(([status, entry]) => {
      // `produces` is the success's content type; errors are JSON.
      if (!produces.length || !status.startsWith('2') || entry.content) return [status, entry];
      return [status, { description: entry.description ?? '', content: Object.fromEntries(produces.map((type) => [type, { schema: entry }])) }];
    }),
  );
}

/** Routes on one method and path, told apart by Content-Type: one operation with every form's bodies and answers. */
function mergeForms(forms: { route: RouteOptions; schema: RouteSchema }[]): RouteSchema {
  const [first] = forms;
  const content: Record<string, Json> = {};
  const response: Record<string, Json> = {};
  for (const { schema } of forms) {
    Object.assign(content, bodies(schema));
    for (const [status, entry] of Object.entries(answers(schema))) response[status] = joinAnswers(response[status], entry);
  }
  const { consumes: _c, ...rest } = first!.schema;
  const description = forms.map(({ schema }) => `- ${Object.keys(bodies(schema)).join(', ')}: ${String(schema.summary ?? '')}`).join('\n');
  return {
    ...rest,
    summary: String(first!.schema.summary ?? ''),
    description,
    tags: [...new Set(forms.flatMap(({ schema }) => (schema.tags as string[] | undefined) ?? []))],
    body: { content },
    response,
  };
}
