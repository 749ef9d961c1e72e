// The address the ready line prints (GET /): the demo page and its backend-proxy route (POST
// /demo/session), or, where the demo is off, a short description of the service. The route follows
// the contract's proxy guidance: the API key stays on the server, each client IP is rate-limited, raw
// tokens are never logged. The demo is on by default only where nobody but this machine can reach it
// (a loopback HOST, no TRUST_PROXY: config/demoMode.ts), and then refuses requests a proxy forwarded; DEMO_ENABLED=true
// serves it on any bind. Its calls count against its key's limits like any key's (calls/admission.ts).
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { demoMode } from '../../config/demoMode.js';
import type { Services } from '../../services.js';
import { DemoKey } from '../demo/demoKey.js';
import { HttpError, shapeA } from '../errors.js';
import { loadPageFiles, type PageFile } from '../pageFiles.js';
import { INTERNAL_REQUEST_HEADERS, rateLimited } from '../rateLimits.js';

const PUBLIC_DIR = new URL('../demo/public/', import.meta.url);

// The page loads only its own files and talks only to this origin: nothing from the internet.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; media-src 'self' blob: mediastream:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'permissions-policy': 'microphone=(self), camera=(self)',
  'cache-control': 'no-cache',
};

function sendFile(reply: FastifyReply, file: PageFile): FastifyReply {
  return reply.headers(PAGE_HEADERS).type(file.type).send(file.body);
}

export const demoRoutes = (services: Services): FastifyPluginAsync => async (app) => {
  const mode = demoMode(services.config);
  if (mode === 'off') {
    app.get('/', { schema: { hide: true } }, async () => serviceIndex());
    return;
  }
  const files = loadPageFiles(PUBLIC_DIR);
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
    // A same-host reverse proxy makes a loopback bind public: the default demo is for this machine only.
    if (mode === 'local' && (req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined)) {
      throw new HttpError(403, shapeA('The demo is on by default for this machine only, and a proxy forwarded this request; set DEMO_ENABLED=true to serve it through a proxy.', 'demo_local_only'));
    }
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

/** What GET / says where the demo is off: where the API and its description are, and how to get the demo. */
function serviceIndex() {
  return {
    service: 'parley',
    description: 'Self-hostable real-time voice session server',
    api: {
      client_secrets: 'POST /v1/realtime/client-secrets',
      ice_config: 'GET /v1/realtime/ice-config',
      calls: 'POST /v1/realtime/calls',
    },
    openapi: '/openapi.json',
    docs: '/docs',
    readiness: '/readyz',
    demo: 'off on this bind; set DEMO_ENABLED=true to serve the demo page here (it hands tokens to anyone who can reach it: put it behind HTTPS)',
  };
}
