// TLS for development in one command: `parley tls dev-cert` makes a local CA and a certificate for
// this machine, and prints the settings; a server started with them says https:// and wss://, and
// OpenAI's OpenAIRealtimeWS, trusting only that CA, holds a session with it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { PARLEY, startServer, type RunningServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const run = promisify(execFile);
let dir: string;
let settings: Record<string, string>;
let server: RunningServer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'parley-dev-cert-'));
  const made = await run(process.execPath, [...PARLEY, 'tls', 'dev-cert', '--dir', dir], { env: { ...process.env, DATA_DIR: dir } });
  settings = Object.fromEntries(made.stdout.trim().split('\n').map((line) => line.split('=', 2) as [string, string]));
  server = await startServer({ TLS_CERT_FILE: settings.TLS_CERT_FILE!, TLS_KEY_FILE: settings.TLS_KEY_FILE!, LOG_LEVEL: 'info' });
});
after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('dev-cert prints the server settings and the CA for Node clients; the private keys are the owner\'s only', () => {
  assert.deepEqual(Object.keys(settings), ['TLS_CERT_FILE', 'TLS_KEY_FILE', 'NODE_EXTRA_CA_CERTS']);
  assert.deepEqual(Object.values(settings), ['cert.pem', 'key.pem', 'ca.pem'].map((f) => join(dir, f)));
  for (const key of ['key.pem', 'ca-key.pem']) assert.equal(statSync(join(dir, key)).mode & 0o777, 0o600, key);
});

test('with the certificate, the ready line and the log say https://', async () => {
  assert.match(server.baseUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
  // The log is written asynchronously: its line may come after the ready line.
  const logs = await until('the listening log line', () => server.stdout() + server.stderr(), (text) => text.includes('Server listening at'));
  assert.match(logs, /Server listening at https:\/\/127\.0\.0\.1:\d+/);
  assert.doesNotMatch(logs, /listening at http:\/\//);
});

test('a Node client with NODE_EXTRA_CA_CERTS from dev-cert trusts the server', async () => {
  const probe = "fetch(process.argv[1] + '/healthz').then((r) => process.exit(r.ok ? 0 : 1))";
  await run(process.execPath, ['-e', probe, server.baseUrl], { env: { ...process.env, NODE_EXTRA_CA_CERTS: settings.NODE_EXTRA_CA_CERTS } });
});

test("OpenAI's OpenAIRealtimeWS, trusting the development CA: text in, a response out", async () => {
  const client = new OpenAI({ apiKey: server.devKey, baseURL: `${server.baseUrl}/v1` });
  const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca: readFileSync(settings.NODE_EXTRA_CA_CERTS!, 'utf8') } }, client);
  const events: any[] = [];
  rt.on('event', (e: any) => events.push(e));
  rt.on('error', (e: any) => events.push({ type: 'sdk.error', message: String(e?.message ?? e) }));
  try {
    assert.match(rt.url.toString(), /^wss:\/\//);
    await until('session.created', () => events.map((e) => e.type), (types) => types.includes('session.created'));
    rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] } });
    rt.send({ type: 'response.create' });
    const done = await until('response.done', () => events.find((e) => e.type === 'response.done'), (e) => e !== undefined, 20_000);
    assert.equal(done.response.status, 'completed', JSON.stringify(events.filter((e) => e.type.endsWith('error'))));
  } finally {
    rt.close();
  }
});
