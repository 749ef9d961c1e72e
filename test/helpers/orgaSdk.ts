// The published Orga SDKs against a Parley server, wired as a new user wires them: a web app built with
// @orga-ai/react (orga-page/app.jsx, bundled with esbuild), a backend-proxy route built with
// @orga-ai/node's getSessionConfig() pointed at Parley, and the browser SDK's fixed vendor host
// routed to Parley with Playwright's page.route (what a DNS override or a reverse proxy does in
// production). The vendor host is read from the bundled SDK itself.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { OrgaAI as OrgaServerSdk } from '@orga-ai/node';
import { build } from 'esbuild';
import type { Page } from 'playwright-core';
import type { LaunchedBrowser } from './browser.ts';

export interface OrgaPageBundle {
  js: string;
  /** Where the published browser SDK posts its offer (https://host), found in its code. */
  vendorOrigin: string;
}

let bundled: Promise<OrgaPageBundle> | undefined;

/** The app's script, built once per process. */
export function bundleOrgaPage(): Promise<OrgaPageBundle> {
  bundled ??= build({
    entryPoints: [join(import.meta.dirname, 'orga-page/app.jsx')],
    bundle: true,
    write: false,
    format: 'iife',
    jsx: 'automatic',
    target: 'chrome120',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  }).then((result) => {
    const js = result.outputFiles[0]!.text;
    const calls = /(https:\/\/[a-z0-9.-]+)\/v1\/realtime\/calls/.exec(js);
    if (!calls) throw new Error('the bundled SDK names no https://…/v1/realtime/calls URL');
    return { js, vendorOrigin: calls[1]! };
  });
  return bundled;
}

export interface OrgaApp {
  /** The app's origin (a page of it is at `${url}/`). */
  url: string;
  vendorOrigin: string;
  /** Requests the backend-proxy route answered, and how. */
  proxied: { status: number; error?: string }[];
  close(): Promise<void>;
}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Orga SDK app</title></head>
<body><div id="root"></div><script src="/app.js"></script></body></html>`;

/**
 * Serves the app on loopback: GET / (the page), GET /app.js (the bundle) and GET /api/orga-session,
 * the backend-proxy route the README describes, built with the server SDK and Parley's API key.
 */
export async function startOrgaApp(parley: { baseUrl: string; devKey: string }): Promise<OrgaApp> {
  const { js, vendorOrigin } = await bundleOrgaPage();
  const orga = new OrgaServerSdk({ apiKey: parley.devKey, userEmail: 'caller@example.com', baseUrl: parley.baseUrl });
  const proxied: OrgaApp['proxied'] = [];
  const server: Server = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const path = new URL(req.url ?? '/', 'http://app').pathname;
    if (path === '/') return send(200, 'text/html; charset=utf-8', PAGE);
    if (path === '/app.js') return send(200, 'text/javascript; charset=utf-8', js);
    if (path === '/api/orga-session') {
      void orga.getSessionConfig().then(
        (config) => {
          proxied.push({ status: 200 });
          send(200, 'application/json', JSON.stringify(config));
        },
        (err: Error) => {
          proxied.push({ status: 500, error: err.message });
          send(500, 'application/json', JSON.stringify({ error: 'Failed to get session config' }));
        },
      );
      return;
    }
    send(404, 'text/plain', 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    vendorOrigin,
    proxied,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The browser SDK's requests to its vendor's host go to Parley instead (path and query kept);
 * `onForwarded` learns how long Parley took to answer each.
 */
export async function routeVendorHost(page: Page, vendorOrigin: string, parleyBaseUrl: string, onForwarded?: (method: string, path: string, ms: number) => void): Promise<void> {
  await page.route(`${vendorOrigin}/**`, async (route) => {
    const from = new URL(route.request().url());
    const started = performance.now();
    const response = await route.fetch({ url: parleyBaseUrl + from.pathname + from.search });
    onForwarded?.(route.request().method(), from.pathname, performance.now() - started);
    await route.fulfill({ response });
  });
}

/** A fresh page (its own context) of the app, with the vendor host routed to Parley. */
export async function openOrgaPage(
  browser: LaunchedBrowser,
  app: OrgaApp,
  parleyBaseUrl: string,
  query = '',
  onForwarded?: (method: string, path: string, ms: number) => void,
  /** More script to run in the page before the app's (a benchmark's probes). */
  initScript?: string,
): Promise<Page> {
  const context = await browser.browser.newContext();
  if (initScript) await context.addInitScript(initScript);
  // Records what crosses the SDK's data channel both ways (window.orgaWire), for the tests to check
  // what the published SDK really sends; it does not change what the SDK does.
  await context.addInitScript(`(() => {
    const wire = (window.orgaWire = []);
    const create = RTCPeerConnection.prototype.createDataChannel;
    RTCPeerConnection.prototype.createDataChannel = function (...args) {
      const channel = create.apply(this, args);
      const send = channel.send;
      channel.send = function (data) { wire.push({ dir: 'out', data: String(data) }); return send.call(this, data); };
      channel.addEventListener('message', (e) => wire.push({ dir: 'in', data: String(e.data) }));
      return channel;
    };
  })()`);
  const page = await context.newPage();
  page.once('close', () => void context.close().catch(() => {}));
  await routeVendorHost(page, app.vendorOrigin, parleyBaseUrl, onForwarded);
  await page.goto(`${app.url}/${query}`);
  await page.waitForSelector('#start');
  return page;
}

/** What the page recorded (window.orga): callbacks, the hook's state, the agent audio's loudness. */
export interface OrgaProbe {
  startedAt: number | null;
  events: { name: string; at: number; data: any }[];
  state: {
    connectionState?: string;
    conversationId?: string | null;
    conversationItems?: { sender: string; content: { message: string }; conversationId: string }[];
    isMicOn?: boolean;
    isCameraOn?: boolean;
    modalities?: string[];
    voice?: string | null;
    hasAiAudioStream?: boolean;
  };
  audio: { peak: number; audibleMs: number };
}

export const readProbe = (page: Page): Promise<OrgaProbe> => page.evaluate('window.orga') as Promise<OrgaProbe>;

/** The data-channel messages so far, parsed, with their direction. */
export const readWire = async (page: Page): Promise<{ dir: 'in' | 'out'; message: any }[]> =>
  ((await page.evaluate('window.orgaWire')) as { dir: 'in' | 'out'; data: string }[]).map(({ dir, data }) => ({ dir, message: JSON.parse(data) }));

/**
 * Waits until `condition` (a JavaScript expression over `o`, the page's window.orga) holds; on timeout
 * the error carries what the page recorded.
 */
export async function waitForOrga(page: Page, what: string, condition: string, timeoutMs = 30_000): Promise<OrgaProbe> {
  try {
    await page.waitForFunction(`(() => { const o = window.orga; return !!(${condition}); })()`, undefined, { timeout: timeoutMs, polling: 100 });
  } catch (err) {
    const probe = await readProbe(page).catch(() => undefined);
    const seen = probe && { events: probe.events.map((e) => e.name), state: probe.state, audio: probe.audio };
    throw new Error(`timed out waiting for ${what}: ${(err as Error).message.split('\n')[0]}\npage: ${JSON.stringify(seen)}`);
  }
  return readProbe(page);
}
