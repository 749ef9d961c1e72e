// A Parley node: configuration in, HTTP service up, one ready line out, clean shutdown on signals.
// With PARLEY_WORKERS above 1 the process started is the workers' primary (src/workers.ts) and
// each worker runs this node.
import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from './config/env.js';
import { buildApp } from './http/app.js';
import { createServices } from './services.js';
import { startSipDoor, type SipDoor } from './sip/start.js';
import { createDevelopmentKey, createLog, printReady } from './startup.js';
import { lockDataDir } from './storage/dataDirLock.js';
import { hostInUrl } from './system/addresses.js';
import { ensureDataDir } from './system/dataDir.js';
import { StartupError, bindFailure } from './system/startupError.js';
import { workerIndex as workerIndexOf } from './system/workerIndex.js';
import { COTURN_BY_PRIMARY, runWorkers, type WorkerMessage } from './workers.js';

export async function serve(config: Config): Promise<void> {
  try {
    if (cluster.isPrimary) {
      ensureDataDir(config.DATA_DIR, (message) => createLog(config).warn(message));
      // Before anything else uses the folder (its store, its coturn): a second server on it stops here.
      lockDataDir(config.DATA_DIR);
    }
    if (cluster.isPrimary && config.PARLEY_WORKERS > 1) return await runWorkers(config, createLog(config));
    return await runNode(config);
  } catch (err) {
    if (!(err instanceof StartupError)) throw err;
    process.stderr.write(`parley: ${err.message}\n`);
    process.exit(1);
  }
}

async function runNode(config: Config): Promise<void> {
  const workerIndex = workerIndexOf();
  const log = createLog(config).child(workerIndex ? { worker: workerIndex } : {});
  const services = await createServices(config, log, { coturnRunsElsewhere: process.env[COTURN_BY_PRIMARY] === '1' });
  const app = await buildApp(services, log);

  // A worker's primary did this once for all of them.
  if (!workerIndex) await createDevelopmentKey(config, services.apiKeys);

  // In a worker, the port is shared with the other workers (node:cluster hands connections round).
  // Fastify names the scheme from its own `https` option, unset when the server is Parley's own (TLS or not).
  const scheme = config.TLS_CERT_FILE ? 'https' : 'http';
  const listening = (address: string) => `Server listening at ${address.replace(/^https?:/, `${scheme}:`)}`;
  await app.listen({ host: config.HOST, port: config.PORT, listenTextResolver: listening }).catch(async (err: unknown) => {
    // Everything started so far stops first (the speech engines' threads among it), then one line.
    await app.close();
    await services.close();
    throw bindFailure(err, 'Parley', config.HOST, config.PORT, 'PORT');
  });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;

  // The node-to-node listener: this process's own port, where the others pass it calls it should
  // answer and requests for the calls it carries.
  const internal = app.createInternalServer();
  const internalPort = config.INTERNAL_PORT ? config.INTERNAL_PORT + (workerIndex ?? 1) - 1 : 0;
  await listen(internal, config.INTERNAL_HOST, internalPort).catch(async (err: unknown) => {
    await app.close();
    await services.close();
    throw bindFailure(err, 'the node-to-node listener', config.INTERNAL_HOST, internalPort, 'INTERNAL_PORT (or INTERNAL_HOST)');
  });
  // The SIP front door, when configured (in a worker, on the primary's sockets: see workers.ts).
  let sip: SipDoor | undefined;
  if (config.SIP_PORT !== undefined) {
    sip = await startSipDoor(config, services, log).catch(async (err: unknown) => {
      internal.close();
      await app.close();
      await services.close();
      throw err;
    });
  }
  const internalAddr = internal.address();
  const nodeUrl = `http://${hostInUrl(config.INTERNAL_HOST)}:${typeof internalAddr === 'object' && internalAddr ? internalAddr.port : internalPort}`;
  await services.announce(nodeUrl, port).catch((err: Error) => log.warn({ err: err.message }, 'could not record this node in the registry yet (the next heartbeat will)'));

  if (workerIndex) process.send!({ kind: 'listening', port } satisfies WorkerMessage);
  else printReady(config, port);

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
    internal.close();
    internal.closeAllConnections();
    await sip?.close();
    await app.close();
    await services.close();
    // Not libdatachannel's cleanup(): it was seen to deadlock the main thread while closing tracks
    // (beyond the reach of any timer); every peer is closed by now and exit frees the rest.
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // A worker whose primary is gone (even by SIGKILL) drains and leaves.
  if (workerIndex) process.on('disconnect', () => void stop('primary exited'));
}

/** Listens on a port of this process's own (`exclusive`: in a worker, not shared through the primary). */
function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
