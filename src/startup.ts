// What a Parley process says as it starts, the same whether it is one node or the primary of its
// workers: its log, the development key of a first start, and the ready line.
import { destination, pino, type Logger } from 'pino';
import type { ApiKeyStore } from './auth/apiKeys.js';
import type { Config } from './config/env.js';
import { hostInUrl } from './system/addresses.js';

export function createLog(config: Config): Logger {
  // Logs go to stderr as JSON; stdout carries only what a person or a script reads (ready line, dev key).
  return pino(
    {
      level: config.LOG_LEVEL,
      redact: { paths: ['req.headers.authorization', '*.authorization', '*.token', '*.ephemeral_token', '*.key'], censor: '[redacted]' },
    },
    destination(2),
  );
}

/** CREATE_DEV_KEY: on a first start with no API keys, creates one and prints it, once. */
export async function createDevelopmentKey(config: Config, apiKeys: ApiKeyStore): Promise<void> {
  if (!config.CREATE_DEV_KEY || (await apiKeys.count()) > 0) return;
  const { key, record } = await apiKeys.create('development');
  process.stdout.write(`created development API key ${record.id} (shown once, store it now): ${key}\n`);
}

/** The line scripts wait for: the service answers at this address. */
export function printReady(host: string, port: number, detail = ''): void {
  process.stdout.write(`parley ready at http://${hostInUrl(host)}:${port}${detail}\n`);
}
