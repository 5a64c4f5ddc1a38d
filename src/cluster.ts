/**
 * `WORKERS=N`: N server processes share the port through `node:cluster`, so sign-in (bound by
 * argon2 on the CPU) and everything else use every core. Workers share nothing in memory:
 * sessions, revocations, rate limits and signing keys all live in storage (or Redis), exactly as
 * they do for separate instances behind a load balancer.
 *
 * The primary prepares storage once (migrations, the first signing key) so workers never race to
 * do it, forks the workers, replaces one that dies (at most once a second), and on SIGTERM/SIGINT
 * passes the signal on and waits for every worker to finish its requests and exit.
 */
import cluster, { type Worker } from 'node:cluster';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from './config.ts';
import { openStorage } from './storage/database.ts';
import { waitForStorage } from './storage/wait-for-storage.ts';
import { migrateToLatest } from './modules.ts';
import { loadSigningKeys } from './sessions/signing-keys.ts';
import { systemClock } from './lib/clock.ts';

/** Longer than a worker's own shutdown bound, so the workers decide and report. */
const CLUSTER_SHUTDOWN_TIMEOUT_MS = 15_000;
const RESTART_DELAY_MS = 1_000;

export function isClusterWorker(): boolean {
  return cluster.isWorker;
}

/** The primary's work: prepare storage, fork `config.workers` workers, supervise them. */
export async function runPrimary(config: Config, log: (message: string) => void): Promise<void> {
  const storage = openStorage(config.database);
  try {
    await waitForStorage(storage, { config: config.database, timeoutMs: config.databaseConnectTimeoutSeconds * 1000, onRetry: log });
    await migrateToLatest(storage.db);
    const keys = await loadSigningKeys({ db: storage.db, authSecret: config.authSecret, clock: systemClock, retentionMs: config.tokens.accessTokenTtlSeconds * 1000, reloadIntervalMs: 0 });
    keys.stop();
  } finally {
    await storage.close();
  }

  // Metrics: a worker's scrape answers for every worker (the primary gathers them).
  if (config.metrics.isEnabled) (await import('./metrics/cluster-metrics.ts')).answerClusterScrapes();

  let isStopping = false;
  const fork = (index: number): Worker => cluster.fork({ GATEHOUSE_WORKER_INDEX: String(index) });
  const byIndex = new Map<number, Worker>();
  for (let index = 0; index < config.workers; index += 1) byIndex.set(index, fork(index));
  log(`started ${config.workers} workers`);

  cluster.on('exit', (worker, code, signal) => {
    const index = [...byIndex].find(([, w]) => w === worker)?.[0];
    if (index === undefined) return;
    byIndex.delete(index);
    if (isStopping) return;
    log(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
    void sleep(RESTART_DELAY_MS).then(() => {
      if (!isStopping) byIndex.set(index, fork(index));
    });
  });

  const stop = (signal: NodeJS.Signals) => {
    if (isStopping) return;
    isStopping = true;
    log(`${signal}: stopping ${byIndex.size} workers`);
    for (const worker of byIndex.values()) worker.process.kill(signal);
    const timer = setTimeout(() => {
      log('workers did not stop in time; exiting');
      process.exit(1);
    }, CLUSTER_SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    const check = setInterval(() => {
      if (byIndex.size === 0) {
        clearInterval(check);
        process.exit(0);
      }
    }, 50);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/** This worker's number (0 for a single process): the first one prints the start-up banner. */
export function workerIndex(): number {
  return cluster.isWorker ? Number(process.env.GATEHOUSE_WORKER_INDEX ?? 0) : 0;
}
