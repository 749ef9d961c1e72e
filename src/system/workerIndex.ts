// Which worker of PARLEY_WORKERS this process is: the primary tells each worker its number through
// its environment (not a setting of its own), and the parts that act per worker read it here.
import cluster from 'node:cluster';

export const WORKER_INDEX = 'PARLEY_WORKER_INDEX';

/** This worker's number (1, 2…) under PARLEY_WORKERS; undefined in a process of its own. */
export function workerIndex(): number | undefined {
  const index = Number(process.env[WORKER_INDEX]);
  return cluster.isWorker && Number.isInteger(index) && index > 0 ? index : undefined;
}
