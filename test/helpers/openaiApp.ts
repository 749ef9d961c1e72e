// An app built on OpenAI's published clients, wired as their docs show, against a Parley server: a
// page using @openai/agents-realtime (openai-page/app.ts, bundled with esbuild) whose transport's
// baseUrl points at Parley, and a backend route minting client secrets with the `openai` library.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import OpenAI from 'openai';
import { Agent } from 'undici';

let bundled: Promise<string> | undefined;

/** The page's script, built once per process. */
function bundle(): Promise<string> {
  bundled ??= build({ entryPoints: [join(import.meta.dirname, 'openai-page/app.ts')], bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'silent' }).then(
    (r) => r.outputFiles[0]!.text,
  );
  return bundled;
}

export interface OpenAiApp {
  /** The app's page. */
  url: string;
  close(): Promise<void>;
}

/** Serves the page (GET /), its script (GET /app.js) and POST /session, the backend route that mints a client secret. */
export async function startOpenAiApp(parley: { baseUrl: string; devKey: string }, ca?: string): Promise<OpenAiApp> {
  const js = await bundle();
  // `ca`: Parley serves TLS with a certificate the test made; the backend trusts it (the library's fetchOptions).
  const fetchOptions = ca ? { fetchOptions: { dispatcher: new Agent({ connect: { ca } }) } as never } : {};
  const openai = new OpenAI({ apiKey: parley.devKey, baseURL: `${parley.baseUrl}/v1`, maxRetries: 0, ...fetchOptions });
  const server = createServer(async (req, res) => {
    if (req.url === '/session' && req.method === 'POST') {
      const secret = await openai.realtime.clientSecrets.create({ session: { type: 'realtime', model: 'gpt-realtime' } });
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value: secret.value }));
    }
    if (req.url === '/app.js') return res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body><script type="module" src="/app.js"></script></body></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
