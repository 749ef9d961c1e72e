// TLS for development in one command: `parley tls dev-cert` makes a local CA and a certificate for
// this machine, and prints the settings; a server started with them says https:// and wss://, and
// examples/openai-websocket.mjs (OpenAI's OpenAIRealtimeWS), trusting that CA through NODE_EXTRA_CA_CERTS,
// holds a session with it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { encodeWav } from '../src/media/audio/wav.ts';
import { PARLEY, startServer, type RunningServer } from './helpers/server.ts';
import { speak } from './helpers/speech.ts';
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

test("examples/openai-websocket.mjs, trusting the development CA through NODE_EXTRA_CA_CERTS: a question in text, one in speech, spoken answers", async () => {
  const wav = join(dir, 'question-24k.wav');
  writeFileSync(wav, encodeWav([speak('what time is it', 24_000)], 24_000));
  const { stdout } = await run(process.execPath, ['examples/openai-websocket.mjs'], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: settings.NODE_EXTRA_CA_CERTS, PARLEY_URL: server.baseUrl, PARLEY_API_KEY: server.devKey, AUDIO_FILE: wav },
    timeout: 60_000,
  }).catch((err: Error & { stdout?: string }) => {
    // What the server said of the session, to tell an unanswered question's cause.
    const said = (server.stdout() + server.stderr()).split('\n').filter((l) => /"level":(40|50)|stage|turn|response/.test(l)).slice(-40).join('\n');
    throw new Error(`the example failed (${err.message}); it printed:\n${err.stdout ?? ''}\nthe server logged:\n${said}`);
  });
  assert.match(stdout, /^session conv_\S+ over wss:\/\/127\.0\.0\.1:\d+$/m);
  const done = [...stdout.matchAll(/^response completed, (\d+\.\d) s of audio$/gm)];
  assert.equal(done.length, 2, stdout);
  for (const [, seconds] of done) assert.ok(Number(seconds) > 0, `each answer came with audio: ${stdout}`);
  // The second answer is to the spoken question (the offline agent repeats what it heard, or tells the time).
  assert.match(stdout.slice(stdout.indexOf('response completed')), /time|\d:\d\d/i, stdout);
});
