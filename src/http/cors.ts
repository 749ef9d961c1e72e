// CORS for the routes a browser calls (ice-config, calls, catalogue). client-secrets gets none: the
// permanent key must never be used from a page.
import type { FastifyInstance } from 'fastify';

export function registerCors(app: FastifyInstance, paths: Set<string>, allowedOrigins: string[]): void {
  const any = allowedOrigins.includes('*');
  // A callback hook, not async: it runs on every request and usually does nothing.
  app.addHook('onRequest', (req, reply, done) => {
    const origin = req.headers.origin;
    if (!origin || !paths.has(req.url.split('?', 1)[0]!) || (!any && !allowedOrigins.includes(origin))) return done();
    reply.header('Access-Control-Allow-Origin', any ? '*' : origin);
    // OpenAI's clients read the call id from Location.
    reply.header('Access-Control-Expose-Headers', 'Location');
    if (!any) reply.header('Vary', 'Origin');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      reply
        .header('Access-Control-Allow-Methods', 'GET, POST, OPTIONS')
        // X-OpenAI-Agents-SDK: OpenAI's browser transport sends it with its offer.
        .header('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-OpenAI-Agents-SDK')
        .header('Access-Control-Max-Age', '600')
        .code(204)
        .send();
      return;
    }
    done();
  });
}
