// PARLEY_WORKERS: one node process per core behind one port (node:cluster). The primary does what
// must happen once (schema migrations, the development key, Parley's coturn), forks the workers,
// prints the ready line when every worker listens, replaces a worker that dies, and on SIGTERM or
// SIGINT has each drain its calls before it leaves. Each worker is a node of its own (NODE_ID-wN):
// its calls, UDP sockets and agents are its own; requests for a call another worker carries reach
// that worker through the node-to-node listeners, as they would on another machine. SIP (SIP_PORT)
// runs on every worker: the primary holds its sockets and relays each message to the worker its
// Call-ID belongs to (sip/clusterRelay.ts), and keeps SIP's counts for the node
// (sip/clusterCounters.ts); the upstream registrations run on the first worker only.
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client';
import type { Logger } from 'pino';
import type { Config } from './config/env.js';
import { openStore } from './auth/store.js';
import { TurnService } from './ice/turnService.js';
import { answerMetricsRequests } from './observability/clusterMetrics.js';
import { SipCounters } from './sip/clusterCounters.js';
import { SipRelay } from './sip/clusterRelay.js';
import { SipBindError } from './sip/listener.js';
import { sipBindFailure, sipSocketOptions } from './sip/start.js';
import { createDevelopmentKey, printReady } from './startup.js';
import { loadOrCreateNodeId } from './storage/nodes.js';
import { NONCE_SECRET_ENV } from './sip/digest.js';
import { WORKER_INDEX } from './system/workerIndex.js';

/** What the primary tells a worker through its environment (not a setting of its own; its index: system/workerIndex.ts). */
export const COTURN_BY_PRIMARY = 'PARLEY_COTURN_BY_PRIMARY';

export type WorkerMessage = { kind: 'listening'; port: number };

/** A worker that dies is replaced after this pause (a crash loop stays a slow one). */
const RESPAWN_DELAY_MS = 1000;

export async function runWorkers(config: Config, log: Logger): Promise<void> {
  const count = config.PARLEY_WORKERS;
  const store = await openStore(config, log);
  await createDevelopmentKey(config, store.apiKeys);
  const turnSecrets = store.turnSecrets;
  await store.bus.close();
  await store.db.destroy();

  const baseId = loadOrCreateNodeId(config.DATA_DIR, config.NODE_ID);
  const sip =
    config.SIP_PORT === undefined
      ? undefined
      : await SipRelay.open(sipSocketOptions(config, log), count).catch((err: unknown) => {
          throw err instanceof SipBindError ? sipBindFailure(err) : err;
        });
  const sipCounters = sip ? new SipCounters(config.SIP_AUTH_MAX_FAILURES) : undefined;
  const turn = config.TURN_ENABLED && !config.TURN_URLS ? await TurnService.start(config, turnSecrets, log, () => {}) : undefined;
  // One digest nonce key for every worker (sip/digest.ts).
  const nonceSecret = randomBytes(32).toString('hex');
  const workerEnv = (index: number): NodeJS.ProcessEnv => ({
    [WORKER_INDEX]: String(index),
    [NONCE_SECRET_ENV]: nonceSecret,
    NODE_ID: `${baseId}-w${index}`,
    ...sip?.workerEnv,
    // An account registered upstream once, not once per worker (the provider would keep the last contact only).
    ...(index > 1 && config.SIP_REGISTRATIONS.length ? { SIP_REGISTRATIONS: '' } : {}),
    ...(turn?.coturnPort ? { [COTURN_BY_PRIMARY]: '1', TURN_PORT: String(turn.coturnPort) } : {}),
  });

  const metrics = new AggregatorRegistry<PrometheusContentType>();
  const workers = new Map<number, Worker>();
  const listening = new Set<number>();
  let ready = false;
  let stopping = false;

  const fork = (index: number) => {
    const worker = cluster.fork(workerEnv(index));
    workers.set(index, worker);
    answerMetricsRequests(worker, metrics);
    sip?.attach(index, worker);
    sipCounters?.attach(worker);
    worker.on('message', (message: WorkerMessage) => {
      if (message?.kind !== 'listening' || ready) return;
      listening.add(index);
      if (listening.size < count) return;
      ready = true;
      log.info({ workers: count }, 'every worker listens');
      printReady(config, message.port, ` (${count} workers)`);
    });
    worker.on('exit', (code, signal) => {
      workers.delete(index);
      if (stopping) return;
      if (!ready) {
        // A worker that cannot start (a taken port, a bad setting) would fail again: give up.
        log.error({ worker: index, code, signal }, 'a worker exited while starting; stopping');
        void stop('worker failed to start', 1);
        return;
      }
      log.error({ worker: index, code, signal }, 'worker exited; starting another in its place');
      setTimeout(() => !stopping && fork(index), RESPAWN_DELAY_MS).unref();
    });
  };

  const stop = async (reason: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'stopping the workers');
    setTimeout(() => {
      log.error('workers did not stop in time; killing them');
      for (const w of workers.values()) w.process.kill('SIGKILL');
    }, 20_000 + config.SHUTDOWN_GRACE_MS).unref();
    await Promise.all(
      [...workers.values()].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
    await sip?.close();
    await sipCounters?.close();
    await turn?.close();
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  for (let i = 1; i <= count; i++) fork(i);
}
