// What a Parley process says as it starts, the same whether it is one node or the primary of its
// workers: its log, the development key of a first start, and the ready line.
import { destination, pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { ApiKeyStore } from './auth/apiKeys.js';
import { demoMode } from './config/demoMode.js';
import type { Config } from './config/env.js';
import { hostInUrl } from './system/addresses.js';

export function createLog(config: Config): Logger {
  // Logs go to stderr; stdout carries only what a person or a script reads (ready line, dev key).
  // Redaction happens as pino serialises, before either format sees the line.
  return pino(
    {
      level: config.LOG_LEVEL,
      redact: { paths: ['req.headers.authorization', '*.authorization', '*.token', '*.ephemeral_token', '*.key'], censor: '[redacted]' },
    },
    logDestination(config.LOG_FORMAT),
  );
}

/** JSON for machines; readable lines for a person at a terminal (LOG_FORMAT=auto). */
function logDestination(format: Config['LOG_FORMAT']): DestinationStream {
  const readable = format === 'pretty' || (format === 'auto' && process.stderr.isTTY === true);
  if (!readable) return destination(2);
  // Synchronous, like destination(2): the last lines before an exit are not lost.
  return pretty({ destination: 2, sync: true, colorize: process.stderr.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

/** CREATE_DEV_KEY: on a first start with no API keys, creates one and prints it, once. */
export async function createDevelopmentKey(config: Config, apiKeys: ApiKeyStore): Promise<void> {
  if (!config.CREATE_DEV_KEY || (await apiKeys.count()) > 0) return;
  const { key, record } = await apiKeys.create('development');
  process.stdout.write(`created development API key ${record.id} (shown once, store it now): ${key}\n`);
}

/**
 * The line scripts wait for: the service answers at this address, and what to do with it. A wildcard
 * bind is printed as this machine's loopback address, which is what a person here can open.
 */
export function printReady(config: Pick<Config, 'HOST' | 'DEMO_ENABLED' | 'TRUST_PROXY' | 'TLS_CERT_FILE'>, port: number, detail = ''): void {
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST === '::' ? '::1' : config.HOST;
  const url = `${config.TLS_CERT_FILE ? 'https' : 'http'}://${hostInUrl(host)}:${port}`;
  const next =
    demoMode(config) === 'off'
      ? `the API (${url}/openapi.json); the demo page is off on this bind (DEMO_ENABLED=true serves it)`
      : `open it in a browser and press Talk to speak with the agent`;
  process.stdout.write(`parley ready at ${url}${detail} — ${next}\n`);
}
