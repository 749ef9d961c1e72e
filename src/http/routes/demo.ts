// The demo page (GET /) and its backend-proxy route (POST /demo/session), following the contract's
// proxy guidance: the API key stays on the server, each client IP is rate-limited, raw tokens are
// never logged, and nothing is served unless PARLEY_ENV=development or DEMO_ENABLED=true.
import { readFileSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Services } from '../../services.js';
import { DemoKey } from '../demo/demoKey.js';
import { HttpError, shapeA } from '../errors.js';
import { INTERNAL_REQUEST_HEADERS, rateLimited } from '../rateLimits.js';

const PUBLIC_DIR = new URL('../demo/public/', import.meta.url);

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

// The page loads only its own files and talks only to this origin: nothing from the internet.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; media-src 'self' blob: mediastream:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'permissions-policy': 'microphone=(self), camera=(self)',
  'cache-control': 'no-cache',
};

export function demoEnabled(config: Services['config']): boolean {
  return config.PARLEY_ENV === 'development' || config.DEMO_ENABLED;
}

interface PublicFile {
  body: Buffer;
  type: string;
}

/** The page's static files, read once at start (a handful of small files). */
function loadPublicFiles(): Map<string, PublicFile> {
  const files = new Map<string, PublicFile>();
  for (const name of readdirSync(PUBLIC_DIR)) {
    const type = CONTENT_TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(new URL(name, PUBLIC_DIR)), type });
  }
  return files;
}

function sendFile(reply: FastifyReply, file: PublicFile): FastifyReply {
  return reply.headers(PAGE_HEADERS).type(file.type).send(file.body);
}

export const demoRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  if (!demoEnabled(services.config)) return;
  const files = loadPublicFiles();
  const perMinute = services.config.DEMO_RATE_LIMIT_PER_MINUTE;
  const demoKey = new DemoKey(services.apiKeys, services.config.DEMO_API_KEY);
  app.addHook('onClose', async () => demoKey.dispose().catch((err: Error) => app.log.warn({ err: err.message }, 'demo: could not revoke its key')));
  app.log.info({ key: demoKey.source }, 'demo page enabled at /');

  const hidden = { schema: { hide: true } };
  app.get('/', hidden, async (_req, reply) => sendFile(reply, files.get('index.html')!));
  for (const [name, file] of files) {
    if (name !== 'index.html') app.get(`/demo/${name}`, hidden, async (_req, reply) => sendFile(reply, file));
  }

  // The server SDK's guide form: {ephemeralToken, iceServers}. Done in-process through the same
  // routes an SDK calls (client-secrets, then ice-config), so the demo follows the public contract.
  app.post('/demo/session', hidden, async (req, reply) => {
    // Counted with the other rate limits (shared through Redis); its own client-secrets request is
    // internal, so this is the demo's only limit.
    const admission = await app.rateLimits.hit('demo-ip', req.ip, perMinute, 60_000);
    if (!admission.allowed) {
      const retry = admission.retryAfterSeconds;
      services.metrics.rateLimited.inc({ limit: 'demo-ip' });
      throw rateLimited('orga', `Too many demo sessions from this address; try again in ${retry} s.`, retry);
    }
    const secrets = await app.inject({
      method: 'POST',
      url: '/v1/realtime/client-secrets',
      headers: { authorization: `Bearer ${await demoKey.key()}`, 'content-type': 'application/json', ...INTERNAL_REQUEST_HEADERS },
    });
    if (secrets.statusCode !== 200) {
      req.log.warn({ reqId: req.id, status: secrets.statusCode, key: demoKey.source }, 'demo: client-secrets refused the demo key');
      throw new HttpError(502, shapeA('The demo could not get a token: the server refused its API key.', 'demo_unavailable'));
    }
    const ephemeralToken = (secrets.json() as { ephemeral_token: string }).ephemeral_token;
    const ice = await app.inject({ method: 'GET', url: '/v1/realtime/ice-config', headers: { authorization: `Bearer ${ephemeralToken}` } });
    if (ice.statusCode !== 200) {
      req.log.warn({ reqId: req.id, status: ice.statusCode }, 'demo: ice-config refused the demo token');
      throw new HttpError(502, shapeA('The demo could not get its ICE configuration.', 'demo_unavailable'));
    }
    const { iceServers } = ice.json() as { iceServers: unknown[] };
    return reply.header('cache-control', 'no-store').send({ ephemeralToken, iceServers });
  });
};
