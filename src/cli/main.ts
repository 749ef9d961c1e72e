// The `parley` command: run the service and manage its keys.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Argument, Command, Help, type Option } from 'commander';
import dotenv from 'dotenv';
import { ConfigError, loadConfig, type Config } from '../config/env.js';
import type { Store } from '../auth/store.js';
import { loadOrCreateLocalSecrets } from '../auth/localSecrets.js';
import { coturnConfig, coturnOptionsFromConfig, managedCoturnConfig } from '../ice/coturnConfig.js';
import { ensureDataDir } from '../system/dataDir.js';
import { makeDevCertificate } from '../system/devCertificate.js';
import { StartupError } from '../system/startupError.js';
import { WEBHOOK_EVENT_TYPES, parseEventTypes } from '../config/webhookEventTypes.js';
import { DEFAULT_WEBHOOK_EVENTS } from '../webhooks/events.js';
import { checkWebhookUrl, configuredHttpListener, webhookGuard } from '../webhooks/destinations.js';
import { NodeStore } from '../storage/nodes.js';
import { webhookStoresOf } from '../webhooks/stores.js';
import { printJson } from './printJson.js';

dotenv.config();

function config(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`parley: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** The configuration, for a command that uses DATA_DIR: a DATA_DIR it cannot use is one line. */
function configWithDataDir(): Config {
  const cfg = config();
  try {
    ensureDataDir(cfg.DATA_DIR, (message) => process.stderr.write(`parley: warning: ${message}\n`));
  } catch (err) {
    if (!(err instanceof StartupError)) throw err;
    process.stderr.write(`parley: ${err.message}\n`);
    process.exit(1);
  }
  return cfg;
}

async function withStore<T>(fn: (store: Store, cfg: Config) => Promise<T>): Promise<T> {
  // Loaded on use, so --version and --help load no storage driver; the store alone, never the
  // service's modules (speech engines, WebRTC stacks), which take seconds to load.
  const { openStore } = await import('../auth/store.js');
  const cfg = configWithDataDir();
  const store = await openStore(cfg);
  try {
    return await fn(store, cfg);
  } finally {
    await store.bus.close();
    await store.db.destroy();
  }
}

/** The package's version; package.json is two levels up from src/cli and from dist/cli alike. */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const program = new Command('parley')
  .description('Parley: self-hostable real-time voice session server')
  .version(VERSION, '-V, --version', 'print the version')
  // Commander's help does not mark required options; set before the subcommands, which inherit it.
  .configureHelp({
    optionDescription(this: Help, option: Option) {
      const text = Help.prototype.optionDescription.call(this, option);
      return option.mandatory ? `${text} (required)` : text;
    },
  });

program
  .command('serve')
  .description('run the HTTP service (configuration from the environment)')
  .action(async () => (await import('../server.js')).serve(config()));

const keys = program.command('keys').description('manage server API keys');
keys
  .command('create')
  .description('create an API key and print it (shown only this once)')
  .requiredOption('--name <name>', 'a name to recognise the key by')
  .action(async (opts: { name: string }) =>
    withStore(async (store) => {
      const { key, record } = await store.apiKeys.create(opts.name);
      process.stdout.write(`id:   ${record.id}\nname: ${record.name}\nkey:  ${key}\n`);
      process.stderr.write('Store the key now: Parley keeps only its hash and cannot show it again.\n');
    }),
  );
keys
  .command('list')
  .description('list API keys (never their secret part)')
  .option('--json', 'print JSON')
  .action(async (opts: { json?: boolean }) =>
    withStore(async (store) => {
      const list = await store.apiKeys.list();
      if (opts.json) return printJson(list);
      process.stdout.write(['ID', 'NAME', 'PREFIX', 'CREATED', 'LAST USED', 'STATUS', 'RECORDING'].join('\t') + '\n');
      for (const k of list) {
        const status = k.revokedAt ? `revoked ${k.revokedAt}` : 'active';
        process.stdout.write([k.id, k.name, `${k.prefix}…`, k.createdAt, k.lastUsedAt ?? '-', status, k.recording ?? 'default'].join('\t') + '\n');
      }
    }),
  );
keys
  .command('revoke')
  .description('revoke an API key; its live tokens stop working too')
  .argument('<id>', 'key id (from keys list)')
  .action(async (id: string) =>
    withStore(async (store) => {
      const outcome = await store.apiKeys.revoke(id);
      if (outcome === 'unknown') {
        process.stderr.write(`parley: no API key with id ${id}\n`);
        process.exitCode = 1;
        return;
      }
      // Told again when already revoked: a notice that failed the first time gets another chance.
      await store.bus.publish({ kind: 'key-revoked', id }).catch((err: Error) => {
        process.stderr.write(`parley: could not notify other nodes through Redis (${err.message}); they will notice within KEY_CACHE_TTL_MS\n`);
      });
      process.stdout.write(outcome === 'revoked' ? `revoked ${id}\n` : `${id} was already revoked\n`);
    }),
  );

keys
  .command('recording')
  .description("record this key's calls (on), never (off), or as the server's RECORDING says (default); applies to calls started afterwards")
  .argument('<id>', 'key id (from keys list)')
  .addArgument(new Argument('<choice>', 'on, off or default').choices(['on', 'off', 'default']))
  .action(async (id: string, choice: 'on' | 'off' | 'default') =>
    withStore(async (store) => {
      if (!(await store.apiKeys.setRecording(id, choice === 'default' ? null : choice))) {
        process.stderr.write(`parley: no API key with id ${id}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`recording for ${id}: ${choice}\n`);
    }),
  );

const tokens = program.command('tokens').description('manage ephemeral-token signing');
tokens
  .command('rotate-signing-key')
  .description('start signing with a new secret; tokens signed with the old one stay valid until they expire')
  .action(async () =>
    withStore(async (store) => {
      const { kid, retired } = await store.signingKeys.rotate();
      await store.bus.publish({ kind: 'signing-key-rotated', kid }).catch(() => {});
      process.stdout.write(`signing with ${kid}; retired ${retired.join(', ') || 'none'}\n`);
    }),
  );

const webhooks = program.command('webhooks').description("webhook endpoints of API keys (signed per Standard Webhooks) and their deliveries");
webhooks
  .command('add')
  .description("send the events of a key's calls to a URL; prints the endpoint's signing secret (shown only this once)")
  .requiredOption('--key <id>', 'API key id (from keys list) whose calls it receives')
  .requiredOption('--url <url>', 'http(s) URL the events are POSTed to')
  .option('--events <types>', `comma-separated event types (${WEBHOOK_EVENT_TYPES.join(', ')})`, DEFAULT_WEBHOOK_EVENTS.join(','))
  .action(async (opts: { key: string; url: string; events: string }) =>
    withStore(async (store, cfg) => {
      let events;
      try {
        events = parseEventTypes(opts.events);
      } catch (err) {
        return fail(`--events: ${(err as Error).message}`);
      }
      const url = URL.canParse(opts.url) ? new URL(opts.url) : undefined;
      if (url?.protocol !== 'http:' && url?.protocol !== 'https:') return fail(`--url: expected an http(s) URL, got "${opts.url}"`);
      if (!(await store.apiKeys.list()).some((k) => k.id === opts.key && !k.revokedAt)) return fail(`no active API key with id ${opts.key}`);
      try {
        await checkWebhookUrl(url.toString(), webhookGuard(cfg, new NodeStore(store.db), () => configuredHttpListener(cfg)));
      } catch (err) {
        return fail(`--url: ${(err as Error).message}`);
      }
      const { endpoint, secret } = await webhookStoresOf(store, cfg).webhookEndpoints.add(opts.key, url.toString(), events);
      process.stdout.write(`id:     ${endpoint.id}\nkey:    ${endpoint.apiKeyId}\nurl:    ${endpoint.url}\nevents: ${endpoint.events.join(',')}\nsecret: ${secret}\n`);
      process.stderr.write('Store the secret now (your receiver verifies signatures with it): Parley cannot show it again.\n');
    }),
  );
webhooks
  .command('list')
  .description('list webhook endpoints (never their secrets), the global one (WEBHOOK_URL) included')
  .option('--key <id>', "only this API key's")
  .option('--json', 'print JSON')
  .action(async (opts: { key?: string; json?: boolean }) =>
    withStore(async (store, cfg) => {
      const list = await webhookStoresOf(store, cfg).webhookEndpoints.list(opts.key);
      if (opts.json) return printJson(list);
      process.stdout.write(['ID', 'KEY', 'URL', 'EVENTS', 'STATUS'].join('\t') + '\n');
      for (const e of list) {
        const status = e.disabledAt ? `disabled ${e.disabledAt}` : 'active';
        process.stdout.write([e.id, e.apiKeyId ?? '(all keys)', e.url, e.events.join(','), status].join('\t') + '\n');
      }
    }),
  );
webhooks
  .command('remove')
  .description('remove an endpoint; its undelivered events are dropped')
  .argument('<id>', 'endpoint id (from webhooks list)')
  .action(async (id: string) =>
    withStore(async (store, cfg) => {
      if (!(await webhookStoresOf(store, cfg).webhookEndpoints.remove(id))) {
        return fail(id === 'global' ? 'the global endpoint comes from WEBHOOK_URL: unset it to remove it' : `no webhook endpoint with id ${id}`);
      }
      process.stdout.write(`removed ${id}\n`);
    }),
  );
webhooks
  .command('deliveries')
  .description('list webhook deliveries, newest first: each event for each endpoint, its status and attempts')
  .option('--key <id>', "only this API key's calls'")
  .option('--limit <n>', 'at most this many', '50')
  .option('--json', 'print JSON (payloads included)')
  .action(async (opts: { key?: string; limit: string; json?: boolean }) =>
    withStore(async (store, cfg) => {
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) return fail(`--limit: expected an integer from 1 to 10000, got "${opts.limit}"`);
      const list = await webhookStoresOf(store, cfg).webhookOutbox.list({ ...(opts.key ? { apiKeyId: opts.key } : {}), limit });
      if (opts.json) return printJson(list);
      process.stdout.write(['EVENT', 'TYPE', 'URL', 'STATUS', 'ATTEMPTS', 'LAST CODE', 'NEXT ATTEMPT', 'LAST ERROR'].join('\t') + '\n');
      for (const d of list) {
        const next = d.status === 'pending' ? new Date(d.nextAttemptAt).toISOString() : '-';
        process.stdout.write([d.eventId, d.eventType, d.url, d.status, d.attempts, d.lastStatusCode ?? '-', next, d.lastError ?? '-'].join('\t') + '\n');
      }
    }),
  );

/** A user error of a command: one line on stderr, exit code 1. */
function fail(message: string): void {
  process.stderr.write(`parley: ${message}\n`);
  process.exitCode = 1;
}

const turn = program.command('turn').description('coturn, the TURN server beside Parley');
turn
  .command('config')
  .description("print a turnserver.conf for coturn's TURN REST API mode, from the same settings (it holds the TURN secrets): for TURN_URLS, or else the one Parley's own coturn runs with")
  .option('--output <file>', 'write it to this file (mode 0600) instead of stdout')
  .action((opts: { output?: string }) => {
    const cfg = configWithDataDir();
    const secrets = cfg.TURN_SECRETS ?? [loadOrCreateLocalSecrets(cfg.DATA_DIR).turnSecret];
    let text: string;
    try {
      if (cfg.TURN_URLS) text = coturnConfig(coturnOptionsFromConfig(cfg, secrets));
      else if (cfg.TURN_PORT) text = managedCoturnConfig(cfg, secrets, cfg.TURN_PORT);
      else throw new Error('TURN_PORT=0: the port of Parley\'s coturn is picked when it starts; set TURN_PORT or TURN_URLS');
    } catch (err) {
      process.stderr.write(`parley: ${(err as Error).message}\n`);
      process.exit(2);
    }
    if (!opts.output) return void process.stdout.write(text);
    writeFileSync(opts.output, text, { mode: 0o600 });
    chmodSync(opts.output, 0o600);
    process.stderr.write(`wrote ${opts.output}\n`);
  });

const tls = program.command('tls').description('TLS certificates');
tls
  .command('dev-cert')
  .description("make a local CA and a certificate it signs for 127.0.0.1, ::1 and localhost (development only), and print the settings that use them")
  .option('--dir <dir>', 'where to write ca.pem, cert.pem and key.pem, replacing them (default: DATA_DIR/tls)')
  .action((opts: { dir?: string }) => {
    const dir = opts.dir ?? join(configWithDataDir().DATA_DIR, 'tls');
    let made;
    try {
      made = makeDevCertificate(dir);
    } catch (err) {
      return fail((err as Error).message);
    }
    process.stderr.write(`wrote a development CA and a certificate for 127.0.0.1, ::1 and localhost in ${dir}\nParley's settings (environment or .env), then its clients' trust in the CA:\n`);
    process.stdout.write(`TLS_CERT_FILE=${made.certFile}\nTLS_KEY_FILE=${made.keyFile}\nNODE_EXTRA_CA_CERTS=${made.caFile}\n`);
  });

await program.parseAsync(process.argv);
