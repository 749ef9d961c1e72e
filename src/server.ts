// A Parley node: configuration in, HTTP service up, one ready line out, clean shutdown on signals.
import { setTimeout as sleep } from 'node:timers/promises';
import { destination, pino } from 'pino';
import type { Config } from './config/env.js';
import { buildApp } from './http/app.js';
import { createServices } from './services.js';

export async function serve(config: Config): Promise<void> {
  // Logs go to stderr as JSON; stdout carries only what a person or a script reads (ready line, dev key).
  const log = pino(
    {
      level: config.LOG_LEVEL,
      redact: { paths: ['req.headers.authorization', '*.authorization', '*.token', '*.ephemeral_token', '*.key'], censor: '[redacted]' },
    },
    destination(2),
  );
  const services = await createServices(config, log);
  const app = await buildApp(services, log);

  if (config.CREATE_DEV_KEY && (await services.apiKeys.count()) === 0) {
    const { key, record } = await services.apiKeys.create('development');
    process.stdout.write(`created development API key ${record.id} (shown once, store it now): ${key}\n`);
  }

  await app.listen({ host: config.HOST, port: config.PORT });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  process.stdout.write(`parley ready at http://${host}:${port}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    // Whatever hangs (a peer that never closes, the store), the process still leaves.
    setTimeout(() => {
      log.error('shutdown took more than 15 s past its grace period; exiting anyway');
      process.exit(1);
    }, 15_000 + config.SHUTDOWN_GRACE_MS).unref();
    // Drain: every request but /healthz, /readyz and /metrics gets 503 (the port stays open), live
    // calls get session.ended and are closed and recorded; then the grace period, then the port closes.
    await services.calls.drain('server_shutdown');
    if (config.SHUTDOWN_GRACE_MS) await sleep(config.SHUTDOWN_GRACE_MS);
    await app.close();
    await services.close();
    // Not libdatachannel's cleanup(): it was seen to deadlock the main thread while closing tracks
    // (beyond the reach of any timer); every peer is closed by now and exit frees the rest.
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
