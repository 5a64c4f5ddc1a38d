/**
 * Metrics of a cluster (WORKERS > 1) as one: a scrape lands on whichever worker the port gives it
 * to, and that worker's own counters are a fraction of the whole, which would seem to jump from
 * scrape to scrape. So a worker asks the primary, the primary asks every worker for its metrics
 * (prom-client's JSON form), adds them up (`AggregatorRegistry.aggregate`: counters and histograms
 * summed, per-process gauges summed, gauges of shared state marked `max`) and answers with the
 * text. A worker that does not answer in time is left out of that scrape (a restart, say); the
 * primary itself loads no app, only this file.
 */
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** One worker's metrics as `getMetricsAsJSON()` gives them. */
type WorkerMetrics = object;

const SCRAPE = 'gatehouse:metrics:scrape';
const SCRAPED = 'gatehouse:metrics:scraped';
const COLLECT = 'gatehouse:metrics:collect';
const COLLECTED = 'gatehouse:metrics:collected';
/** How long the primary waits for each worker's metrics, and a worker for the primary's answer (a little more). */
const WORKER_TIMEOUT_MS = 3_000;
const SCRAPE_TIMEOUT_MS = WORKER_TIMEOUT_MS + 2_000;

type Message = { type?: unknown; id?: unknown; metrics?: unknown; text?: unknown; error?: unknown };

/** In the primary: answer the workers' scrapes with the whole cluster's metrics. */
export function answerClusterScrapes(): void {
  const waiting = new Map<string, (metrics: WorkerMetrics[] | null) => void>();

  cluster.on('message', (worker, message: Message) => {
    if (message?.type === COLLECTED && typeof message.id === 'string') {
      waiting.get(message.id)?.(Array.isArray(message.metrics) ? (message.metrics as WorkerMetrics[]) : null);
      return;
    }
    if (message?.type !== SCRAPE || typeof message.id !== 'string') return;
    const id = message.id;
    const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined && w.isConnected());
    const collected = workers.map(
      (w) =>
        new Promise<WorkerMetrics[] | null>((resolve) => {
          const collectId = randomUUID();
          const timer = setTimeout(() => done(null), WORKER_TIMEOUT_MS);
          function done(metrics: WorkerMetrics[] | null) {
            clearTimeout(timer);
            waiting.delete(collectId);
            resolve(metrics);
          }
          waiting.set(collectId, done);
          try {
            w!.send({ type: COLLECT, id: collectId });
          } catch {
            done(null);
          }
        }),
    );
    void Promise.all(collected)
      .then(async (all) => AggregatorRegistry.aggregate(all.filter((metrics): metrics is WorkerMetrics[] => metrics !== null)).metrics())
      .then(
        (text) => worker.isConnected() && worker.send({ type: SCRAPED, id, text }),
        (error: unknown) => worker.isConnected() && worker.send({ type: SCRAPED, id, error: error instanceof Error ? error.message : String(error) }),
      );
  });
}

/** In a worker: hand the primary this process's metrics when asked; a scrape asks the primary for the cluster's. */
export function clusterScrape(registry: Registry): () => Promise<string> {
  const pending = new Map<string, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: Message) => {
    if (message?.type === COLLECT && typeof message.id === 'string') {
      const id = message.id;
      void registry.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: COLLECTED, id, metrics }),
        () => process.send?.({ type: COLLECTED, id, metrics: null }),
      );
      return;
    }
    if (message?.type === SCRAPED && typeof message.id === 'string') {
      const waiter = pending.get(message.id);
      if (waiter === undefined) return;
      pending.delete(message.id);
      if (typeof message.text === 'string') waiter.resolve(message.text);
      else waiter.reject(new Error(`cluster metrics: ${String(message.error ?? 'no answer')}`));
    }
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`cluster metrics: the primary did not answer within ${SCRAPE_TIMEOUT_MS} ms`));
      }, SCRAPE_TIMEOUT_MS);
      pending.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      process.send?.({ type: SCRAPE, id });
    });
}
