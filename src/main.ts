/**
 * `npm start`: load config, then start the server (server.ts). SIGTERM/SIGINT close it gracefully:
 * in-flight requests finish, new ones get 503. With WORKERS > 1 this process is the cluster's
 * primary and each worker runs the server; the primary loads only what it needs (config, storage
 * for migrations, the cluster), not the app.
 */
import { ConfigError, loadDotEnv, type Config } from './config.ts';
import { loadConfig } from './modules.ts';
import { isClusterWorker, runPrimary } from './cluster.ts';
import { serverLogDestination } from './http/logging.ts';
import { startShutdownWatchdog } from './lib/shutdown-watchdog.ts';
import { sizeThreadPool } from './lib/thread-pool-priority.ts';

const SHUTDOWN_TIMEOUT_MS = 10_000;
/** The watchdog thread acts this long after the main thread's own deadline. */
const WATCHDOG_MARGIN_MS = 2_000;
const LOG_FLUSH_MS = 1_000;
/**
 * Requests in flight at SIGTERM get this long to finish (auth requests take milliseconds; a
 * sign-in waits at most HASH_QUEUE_TIMEOUT_MS, 5 s by default, for a hashing slot). A connection
 * still open after it is a client that never finished sending its request (or a stuck one): it is
 * cut, so it cannot hold the shutdown until SHUTDOWN_TIMEOUT_MS and turn a clean stop into exit 1.
 */
const DRAIN_TIMEOUT_MS = 6_000;

/** Runs the server until a signal; used by `npm start` and `gatehouse serve`. */
export async function runServer(): Promise<void> {
  loadDotEnv();
  let config: Config;
  try {
    config = loadConfig(process.env, { onWarning: (message) => process.stderr.write(`warning: ${message}\n`) });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  // Before anything gives the thread pool work: hashes and the rest of the pool's work each get threads.
  const poolWarning = sizeThreadPool(config.passwords.maxConcurrentHashes);
  if (poolWarning !== null) process.stderr.write(`warning: ${poolWarning}\n`);

  if (config.workers > 1 && !isClusterWorker()) {
    await runPrimary(config, (message) => process.stderr.write(`gatehouse: ${message}\n`)).catch((error: unknown) => {
      process.stderr.write(`Gatehouse failed to start: ${describe(error)}\n`);
      process.exit(1);
    });
    return;
  }

  const { startServer } = await import('./server.ts');
  const server = await startServer(config).catch((error: unknown) => {
    process.stderr.write(`Gatehouse failed to start: ${describe(error)}\n`);
    process.exit(1);
  });

  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    server.app.log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      server.app.log.error('shutdown timed out; exiting');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    // And a watchdog that holds whatever the main thread is doing (stuck in a system call, say,
    // where no timer of its own can fire): a thread of its own kills the process a little later.
    startShutdownWatchdog(SHUTDOWN_TIMEOUT_MS + WATCHDOG_MARGIN_MS);
    const drain = setTimeout(() => {
      server.app.log.warn({ drainTimeoutMs: DRAIN_TIMEOUT_MS }, 'shutdown: closing connections still open after the drain period');
      server.app.server.closeAllConnections();
    }, DRAIN_TIMEOUT_MS);
    drain.unref();
    server
      .close()
      // What is still buffered for a slow log reader gets a moment, never a wait without end.
      .then(() => serverLogDestination(config).flush(LOG_FLUSH_MS))
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        server.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error.message}${cause}`;
}

if (import.meta.main) await runServer();
