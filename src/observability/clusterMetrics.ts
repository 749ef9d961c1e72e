// GET /metrics under PARLEY_WORKERS: a scrape reaches one worker (whichever node:cluster hands the
// connection to), so that worker asks the primary, which gathers every worker's registry
// (prom-client's AggregatorRegistry, over the cluster's IPC) and sums them. `?scope=worker` gives
// the answering worker's own figures.
import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type PrometheusContentType, type Registry } from 'prom-client';

type Request = { kind: 'metrics-request'; id: number };
type Answer = { kind: 'metrics-answer'; id: number; text?: string; error?: string };

const ASK_TIMEOUT_MS = 6000;

/** In a worker: lets the primary read `registry` and returns a reader of every worker's sum. */
export function clusterMetricsReader(registry: Registry): () => Promise<string> {
  // Constructing it installs the worker's answer to the primary's requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  let next = 0;
  const waiting = new Map<number, (answer: Answer) => void>();
  process.on('message', (message: Answer) => {
    if (message?.kind === 'metrics-answer') waiting.get(message.id)?.(message);
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary did not gather the workers’ metrics in time'));
      }, ASK_TIMEOUT_MS);
      waiting.set(id, (answer) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (answer.text !== undefined) resolve(answer.text);
        else reject(new Error(answer.error ?? 'no metrics'));
      });
      process.send!({ kind: 'metrics-request', id } satisfies Request);
    });
}

/** In the primary: answers a worker's request for every worker's metrics. */
export function answerMetricsRequests(worker: Worker, aggregator: AggregatorRegistry<PrometheusContentType>): void {
  worker.on('message', (message: Request) => {
    if (message?.kind !== 'metrics-request') return;
    aggregator.clusterMetrics().then(
      (text: string) => worker.isConnected() && worker.send({ kind: 'metrics-answer', id: message.id, text } satisfies Answer),
      (err: Error) => worker.isConnected() && worker.send({ kind: 'metrics-answer', id: message.id, error: err.message } satisfies Answer),
    );
  });
}

