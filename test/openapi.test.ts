// The OpenAPI document is whole: every route the app declares is in it (but for the few listed
// below, each with its reason), it validates as OpenAPI 3.1, and the calls route shows all its forms.
// The app is built in-process (nothing listens); requests go through app.inject.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/env.ts';
import { buildApp } from '../src/http/app.ts';
import { Metrics } from '../src/observability/metrics.ts';
import type { Services } from '../src/services.ts';

/** Routes deliberately left out of the document, each with why. */
const EXCLUDED: { method: string; path: RegExp; why: string }[] = [
  { method: 'HEAD', path: /.*/, why: "Fastify's automatic HEAD for every GET: the GET's answer without a body" },
  { method: 'OPTIONS', path: /^\/v1\/realtime\/[a-z-]+$/, why: 'CORS preflights of the browser routes: 204, no body' },
  { method: 'GET', path: /^\/$/, why: 'the demo page, or where the demo is off a pointer to this document: not API' },
  { method: 'GET', path: /^\/demo\/[\w.-]+\.(js|css)$/, why: "the demo page's scripts and styles" },
  { method: 'POST', path: /^\/demo\/session$/, why: "the demo page's own token route (it calls client-secrets and ice-config, which are documented)" },
  { method: 'GET', path: /^\/docs(\/.*)?$/, why: "this document's rendering (swagger-ui's page, assets and its copies of the document)" },
];

interface DeclaredRoute {
  method: string;
  url: string;
}

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
  webhooks: Record<string, { post: Operation & { parameters: { name: string }[] } }>;
}
interface Operation {
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}

const dataDirs: string[] = [];
after(() => dataDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The app as `parley serve` builds it, and every route it declared. Services: what declaring routes and answering these requests reads. */
async function declaredApp(demoEnabled: boolean): Promise<{ app: FastifyInstance; routes: DeclaredRoute[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-openapi-'));
  dataDirs.push(dataDir);
  const config = loadConfig({ DATA_DIR: dataDir, HOST: '127.0.0.1', DEMO_ENABLED: String(demoEnabled) });
  const services = { config, metrics: new Metrics(), nodeId: 'openapi-test', calls: { isDraining: false, activeCount: 0 }, apiKeys: {} } as unknown as Services;
  const routes: DeclaredRoute[] = [];
  const app = await buildApp(services, false, {
    onRoute: (route) => {
      for (const method of [route.method].flat()) routes.push({ method, url: route.url });
    },
  });
  await app.ready();
  return { app, routes };
}

async function documentOf(app: FastifyInstance): Promise<OpenApiDocument> {
  const res = await app.inject('/openapi.json');
  assert.equal(res.statusCode, 200);
  return res.json() as OpenApiDocument;
}

/** `/v1/realtime/conversations/:id` as OpenAPI writes it. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

for (const demoEnabled of [false, true]) {
  describe(`the document with the demo ${demoEnabled ? 'on' : 'off'}`, () => {
    test('has every declared route but the excluded ones, and each exclusion still matches a route', async () => {
      const { app, routes } = await declaredApp(demoEnabled);
      const doc = await documentOf(app);
      const missing: string[] = [];
      const used = new Set<(typeof EXCLUDED)[number]>();
      for (const { method, url } of routes) {
        const exclusion = EXCLUDED.find((e) => e.method === method && e.path.test(url));
        if (exclusion) used.add(exclusion);
        else if (!doc.paths[openApiPath(url)]?.[method.toLowerCase()]) missing.push(`${method} ${url}`);
      }
      assert.deepEqual(missing, [], 'routes missing from /openapi.json');
      const unused = EXCLUDED.filter((e) => !used.has(e) && !(e.path.source.startsWith('^\\/demo') && !demoEnabled));
      assert.deepEqual(unused.map((e) => `${e.method} ${e.path}`), [], 'exclusions that match no route');
      // Operator routes are in the document, without credentials.
      for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json']) {
        assert.deepEqual((doc.paths[path]!.get as Operation & { tags: string[] }).tags, ['operations'], path);
      }
      await app.close();
    });
  });
}

test('the document validates as OpenAPI 3.1 and names its schemas', async () => {
  const { app } = await declaredApp(false);
  const doc = await documentOf(app);
  assert.equal(doc.openapi, '3.1.0');
  const validator = new Validator();
  const result = await validator.validate(doc as never);
  assert.deepEqual(result.errors ?? [], []);
  assert.equal(result.valid, true);
  assert.equal(validator.version, '3.1');
  const names = Object.keys(doc.components.schemas);
  assert.deepEqual(names.filter((n) => /^def-\d+$/.test(n)), [], 'no def-N names');
  for (const name of ['ShapeA', 'ShapeB', 'OpenAiError', 'CallRequest', 'CallAnswer', 'SdpOffer', 'OpenAiCallForm']) assert.ok(names.includes(name), name);
  await app.close();
});

test("the webhooks' payloads are in the document, signed headers and all; call.ended refers to the call's usage and quality", async () => {
  const { app } = await declaredApp(false);
  const doc = await documentOf(app);
  assert.deepEqual(Object.keys(doc.webhooks).sort(), ['call.ended', 'call.failed', 'call.started', 'call.turn', 'realtime.call.incoming']);
  const incoming = JSON.stringify((doc.webhooks['realtime.call.incoming']!.post.requestBody!.content['application/json'] as any).schema.properties.data);
  assert.match(incoming, /sip_headers/);
  const ended = doc.webhooks['call.ended']!.post;
  assert.deepEqual(ended.parameters.map((p) => p.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  const data = JSON.stringify((ended.requestBody!.content['application/json'] as any).schema.properties.data);
  assert.match(data, /"\$ref":"#\/components\/schemas\/CallUsage"/);
  assert.match(data, /"\$ref":"#\/components\/schemas\/CallQuality"/);
  for (const name of ['CallUsage', 'CallQuality']) assert.ok(name in doc.components.schemas, name);
  await app.close();
});

test('the calls route documents its three forms, their answers, and errors typed as JSON', async () => {
  const { app } = await declaredApp(false);
  const calls = (await documentOf(app)).paths['/v1/realtime/calls']!.post!;
  assert.deepEqual(Object.keys(calls.requestBody!.content).sort(), ['application/json', 'application/sdp', 'multipart/form-data']);
  assert.deepEqual(calls.requestBody!.content['application/json'], { schema: { $ref: '#/components/schemas/CallRequest' } });
  assert.deepEqual(Object.keys(calls.responses['200']!.content!), ['application/json'], 'the Orga form answers JSON');
  assert.deepEqual(Object.keys(calls.responses['201']!.content!), ['application/sdp'], "OpenAI's forms answer the SDP");
  assert.ok(calls.responses['201']!.headers?.Location, 'the call id is in Location');
  for (const status of ['400', '401', '403', '413', '422', '429', '503']) {
    assert.deepEqual(Object.keys(calls.responses[status]?.content ?? {}), ['application/json'], `${status} is JSON`);
  }
  for (const status of ['429', '503']) assert.ok(calls.responses[status]!.headers?.['Retry-After'], `${status} has Retry-After`);
  await app.close();
});

test('every error answer is JSON with a named body; 429 and 503 carry Retry-After', async () => {
  const { app } = await declaredApp(false);
  const doc = await documentOf(app);
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      for (const [status, answer] of Object.entries(operation.responses)) {
        if (Number(status) < 400 || path === '/readyz') continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        assert.deepEqual(Object.keys(answer.content ?? {}), ['application/json'], where);
        assert.match(JSON.stringify(answer.content), /#\/components\/schemas\/(ShapeA|ShapeB|OpenAiError)"/, where);
        if (status === '429' || status === '503') assert.ok(answer.headers?.['Retry-After'], where);
      }
    }
  }
  await app.close();
});

test('/docs renders the document from local assets under a Content-Security-Policy', async () => {
  const { app } = await declaredApp(false);
  const page = await app.inject('/docs');
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.doesNotMatch(csp, /https:|\*/, 'nothing from elsewhere');
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(assets.length > 0);
  for (const asset of assets) {
    assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} is served here`);
    const res = await app.inject(new URL(asset, 'http://parley.test/docs/').pathname);
    assert.equal(res.statusCode, 200, asset);
  }
  const initializer = await app.inject('/docs/static/swagger-initializer.js');
  // The page loads this server's document and asks no validator elsewhere.
  assert.match(initializer.body, /url: resolveUrl\('\.\/json'\)/);
  assert.match(initializer.body, /validatorUrl: null/);
  assert.deepEqual((await app.inject('/docs/json')).json(), (await app.inject('/openapi.json')).json());
  await app.close();
});
