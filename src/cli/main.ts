// The `parley` command: run the service and manage its keys.
import { chmodSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import dotenv from 'dotenv';
import { ConfigError, loadConfig, type Config } from '../config/env.js';
import type { Store } from '../services.js';
import { loadOrCreateLocalSecrets } from '../auth/localSecrets.js';
import { coturnConfig, coturnOptionsFromConfig, managedCoturnConfig } from '../ice/coturnConfig.js';

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

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  // Loaded on use: the service's modules (WebRTC stacks, storage drivers) take seconds to load.
  const { openStore } = await import('../services.js');
  const store = await openStore(config());
  try {
    return await fn(store);
  } finally {
    await store.bus.close();
    await store.db.destroy();
  }
}

const program = new Command('parley').description('Parley: self-hostable real-time voice session server');

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
      if (opts.json) {
        process.stdout.write(JSON.stringify(list, null, 2) + '\n');
        return;
      }
      process.stdout.write(['ID', 'NAME', 'PREFIX', 'CREATED', 'LAST USED', 'STATUS'].join('\t') + '\n');
      for (const k of list) {
        const status = k.revokedAt ? `revoked ${k.revokedAt}` : 'active';
        process.stdout.write([k.id, k.name, `${k.prefix}…`, k.createdAt, k.lastUsedAt ?? '-', status].join('\t') + '\n');
      }
    }),
  );
keys
  .command('revoke')
  .description('revoke an API key; its live tokens stop working too')
  .argument('<id>', 'key id (from keys list)')
  .action(async (id: string) =>
    withStore(async (store) => {
      if (!(await store.apiKeys.revoke(id))) {
        process.stderr.write(`parley: no API key with id ${id}\n`);
        process.exitCode = 1;
        return;
      }
      await store.bus.publish({ kind: 'key-revoked', id }).catch((err: Error) => {
        process.stderr.write(`parley: could not notify other nodes through Redis (${err.message}); they will notice within KEY_CACHE_TTL_MS\n`);
      });
      process.stdout.write(`revoked ${id}\n`);
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

const turn = program.command('turn').description('coturn, the TURN server beside Parley');
turn
  .command('config')
  .description("print a turnserver.conf for coturn's TURN REST API mode, from the same settings (it holds the TURN secrets): for TURN_URLS, or else the one Parley's own coturn runs with")
  .option('--output <file>', 'write it to this file (mode 0600) instead of stdout')
  .action((opts: { output?: string }) => {
    const cfg = config();
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

await program.parseAsync(process.argv);
