// Rate limits of the routes that cost something: client-secrets (Orga) and client_secrets (OpenAI)
// per client address (wrong keys included, so before authentication) and per API key (after it),
// calls (both forms) per ephemeral token, and every other route that looks an API key up (whatever
// route authenticates with requireApiKey or requireTokenOrApiKey, and OpenAI's WebSocket upgrade)
// per client address. Beyond a limit: 429 with Retry-After, in Shape A on
// Orga's routes and in OpenAI's error object on OpenAI's. Counted in Redis when REDIS_URL is set
// (every node and worker together), else in this process's memory; see src/storage/openRateLimitStore.ts.
//
// The hooks are attached when the routes are declared (onRoute), so the route modules stay as they
// are. A call that a node without room passes on (its door: src/calls/door.ts) is counted once, by
// the node its client reached: the node it is passed to does not count it again.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { RETRY_AFTER_SECONDS, type CallLimitExceeded } from '../calls/admission.js';
import type { Config } from '../config/env.js';
import type { Metrics } from '../observability/metrics.js';
import { openRateLimitStore } from '../storage/openRateLimitStore.js';
import type { RateDecision, RateLimitStore } from '../storage/rateLimits.js';
import { looksUpApiKey } from './auth.js';
import { HttpError, shapeA, type ShapeABody } from './errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The counters behind the rate limits (the demo's proxy route counts its sessions there too). */
    rateLimits: RateLimitStore;
  }
}

type Hook = (req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;
type Form = 'orga' | 'openai';

/**
 * Marks a request this process makes to itself (app.inject, e.g. the demo's proxy route, which has
 * its own limit): a secret of this process, so no client can claim it.
 */
export const INTERNAL_REQUEST_HEADERS = { 'x-parley-internal': randomBytes(18).toString('base64url') };

/** Whether `req` is exempt: made by this process itself. */
export function skipRateLimits(req: FastifyRequest): boolean {
  return req.headers['x-parley-internal'] === INTERNAL_REQUEST_HEADERS['x-parley-internal'];
}

/** The 429: Shape A (Orga's routes) or OpenAI's error object (what its clients expect of a rate limit). */
export function rateLimited(form: Form, message: string, retryAfterSeconds: number): HttpError {
  const headers = { 'retry-after': String(retryAfterSeconds) };
  if (form === 'orga') return new HttpError(429, shapeA(message, 'rate_limit_exceeded'), headers);
  return new HttpError(429, { error: { message, type: 'requests', param: null, code: 'rate_limit_exceeded' } } as ShapeABody, headers);
}

/** The 429 of a calls request over one of its caller's concurrent-call limits (src/calls/admission.ts). */
export function callLimited(form: Form, err: CallLimitExceeded, metrics: Metrics): HttpError {
  metrics.rateLimited.inc({ limit: err.limit });
  return rateLimited(form, err.message, RETRY_AFTER_SECONDS);
}

/** client-secrets (Orga) and client_secrets (OpenAI): their own limits, per address and per key. */
const CLIENT_SECRETS_FORMS = new Map<string, Form>([
  ['/v1/realtime/client-secrets', 'orga'],
  ['/v1/realtime/client_secrets', 'openai'],
]);

interface Limit {
  scope: string;
  limit: number;
  subject: (req: FastifyRequest) => string | undefined;
  message: (limit: number, windowSeconds: number, retry: number) => string;
}

/** Opens the store and attaches the limits to the routes declared after this call. */
export async function registerRateLimits(app: FastifyInstance, config: Config, metrics: Metrics): Promise<void> {
  const store = await openRateLimitStore(config, app.log);
  app.decorate('rateLimits', store);
  app.addHook('onClose', async () => store.close());
  const windowSeconds = config.RATE_LIMIT_WINDOW_SECONDS;
  const windowMs = windowSeconds * 1000;

  const perIp: Limit = {
    scope: 'cs-ip',
    limit: config.RATE_LIMIT_CLIENT_SECRETS_PER_IP,
    subject: (req) => req.ip,
    message: (n, w, r) => `Too many client secrets requested from this address (limit: ${n} per ${w} s); try again in ${r} s.`,
  };
  const perKey: Limit = {
    scope: 'cs-key',
    limit: config.RATE_LIMIT_CLIENT_SECRETS_PER_KEY,
    subject: (req) => req.apiKeyId,
    message: (n, w, r) => `Too many client secrets requested with this API key (limit: ${n} per ${w} s); try again in ${r} s.`,
  };
  const lookupsPerIp: Limit = {
    scope: 'lookups-ip',
    limit: config.RATE_LIMIT_KEY_LOOKUPS_PER_IP,
    // A request another node passed on (a hang-up, a relayed sideband) was counted there, for its
    // client's address; here it would count against that node's.
    subject: (req) => (req.forwardedFromNode ? undefined : req.ip),
    message: (n, w, r) => `Too many requests from this address (limit: ${n} per ${w} s); try again in ${r} s.`,
  };
  const perToken: Limit = {
    scope: 'calls-token',
    limit: config.RATE_LIMIT_CALLS_PER_TOKEN,
    // A call another node passed on (a WebRTC offer, a WebSocket session) was counted there.
    subject: (req) => (req.forwardedFromNode ? undefined : req.token?.jti),
    message: (n, w, r) => `Too many calls with this ephemeral token (limit: ${n} per ${w} s); try again in ${r} s.`,
  };

  const hook = (l: Limit, form: Form): Hook => {
    const refuse = (d: RateDecision) => {
      metrics.rateLimited.inc({ limit: l.scope });
      return rateLimited(form, l.message(l.limit, windowSeconds, d.retryAfterSeconds), d.retryAfterSeconds);
    };
    return (req, _reply, done) => {
      const subject = l.subject(req);
      if (subject === undefined || skipRateLimits(req)) return done();
      const decision = store.hit(l.scope, subject, l.limit, windowMs);
      // Synchronous from memory; a promise from Redis (which never rejects: memory stands in).
      if (decision instanceof Promise) decision.then((d) => done(d.allowed ? undefined : refuse(d)), done);
      else done(decision.allowed ? undefined : refuse(decision));
    };
  };

  /** Into the route's `stage` hooks: before its own (authentication, for onRequest) and after them. */
  const attach = (route: RouteOptions, stage: 'onRequest' | 'preHandler', before: Limit[], after: Limit[], form: Form) => {
    const value = route[stage] as Hook | Hook[] | undefined;
    const own = value === undefined ? [] : Array.isArray(value) ? value : [value];
    const active = (ls: Limit[]) => ls.filter((l) => l.limit > 0).map((l) => hook(l, form));
    const hooks = [...active(before), ...own, ...active(after)];
    if (hooks.length > own.length) (route as { [k in typeof stage]?: Hook[] })[stage] = hooks;
  };

  app.addHook('onRoute', (route) => {
    const form = rateLimitForm(route);
    if (!form) return;
    // Every client-secrets request counts for its address, wrong keys included (before authentication).
    if (CLIENT_SECRETS_FORMS.has(route.url)) attach(route, 'onRequest', [perIp], [perKey], form);
    // A WebSocket upgrade counts for its address before its credential is looked at (preValidation),
    // and a session for its token once that is known, before it is admitted (its preHandler).
    else if (REALTIME_SOCKET_PATHS.has(route.url)) {
      attach(route, 'onRequest', [lookupsPerIp], [], form);
      attach(route, 'preHandler', [perToken], [], form);
    }
    // Every other route that looks an API key up counts for its address, before authentication.
    else if (looksUpApiKey(route.onRequest)) attach(route, 'onRequest', [lookupsPerIp], [], form);
    // Calls that get as far as trying an offer count, once their body is read: not bodies too large or not JSON.
    else attach(route, 'preHandler', [], [perToken], form);
  });
}

/**
 * OpenAI's Realtime WebSocket route (and Azure's form of it): each session is a call, counted against
 * its token like one; the same path's POST is the earlier WebRTC route, a call as well.
 */
const REALTIME_SOCKET_PATHS = new Set(['/v1/realtime', '/openai/realtime']);

/**
 * Whether a route has rate limits (429 with Retry-After) and in which error shape: its clients'
 * (OpenAI's routes, tagged `openai`, answer OpenAI's error object). The demo's proxy route counts
 * its own (src/http/routes/demo.ts).
 */
export function rateLimitForm(route: Pick<RouteOptions, 'url' | 'method' | 'constraints' | 'onRequest' | 'schema'>): Form | undefined {
  const methods = [route.method].flat();
  if (CLIENT_SECRETS_FORMS.has(route.url) && methods.includes('POST')) return CLIENT_SECRETS_FORMS.get(route.url);
  if (REALTIME_SOCKET_PATHS.has(route.url) && (methods.includes('GET') || methods.includes('POST'))) return 'openai';
  if (route.url === '/v1/realtime/calls' && methods.includes('POST')) return (route.constraints as { callForm?: string } | undefined)?.callForm === 'openai' ? 'openai' : 'orga';
  if (looksUpApiKey(route.onRequest)) return (route.schema?.tags as string[] | undefined)?.includes('openai') ? 'openai' : 'orga';
  return undefined;
}
