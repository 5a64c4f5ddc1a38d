/**
 * `npm start`: load config -> open storage -> migrate -> wire services -> build app -> listen.
 * SIGTERM/SIGINT close the server gracefully: in-flight requests finish, new ones get 503.
 * With WORKERS > 1 this process is the cluster's primary and each worker runs the above.
 */
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig, loadDotEnv, type Config } from './config.ts';
import { migrateToLatest, openStorage } from './storage/database.ts';
import { createServices } from './services.ts';
import { buildApp } from './app.ts';
import { bootstrapAdmin } from './credentials/bootstrap-admin.ts';
import { warmPasswordEstimator } from './credentials/password-policy.ts';
import { isClusterWorker, runPrimary, workerIndex } from './cluster.ts';

const SHUTDOWN_TIMEOUT_MS = 10_000;
/**
 * Requests in flight at SIGTERM get this long to finish (auth requests take milliseconds; a
 * sign-in waits at most HASH_QUEUE_TIMEOUT_MS, 5 s by default, for a hashing slot). A connection
 * still open after it is a client that never finished sending its request (or a stuck one): it is
 * cut, so it cannot hold the shutdown until SHUTDOWN_TIMEOUT_MS and turn a clean stop into exit 1.
 */
const DRAIN_TIMEOUT_MS = 6_000;

export interface RunningServer {
  app: FastifyInstance;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const storage = openStorage(config.database);
  try {
    await migrateToLatest(storage.db);
    const services = await createServices({ config, storage });
    warmPasswordEstimator();
    const app = await buildApp(services);
    const adminResult = await bootstrapAdmin(services);
    if (adminResult === 'created') app.log.info({ email: config.admin?.email }, 'created the ADMIN user from ADMIN_EMAIL');

    const address = await app.listen({ port: config.port, host: config.host });
    app.log.info({ address, database: config.database.kind, sessionStrategy: config.sessionStrategy }, 'Gatehouse listening');
    // With WORKERS > 1, every worker listens; the first one tells the operator.
    if (workerIndex() === 0) printBanner(config, address, await services.users.countUsers());

    return {
      app,
      async close() {
        await app.close();
        await storage.close();
      },
    };
  } catch (error) {
    await storage.close().catch(() => {});
    throw error;
  }
}

function printBanner(config: Config, listeningOn: string, userCount: number): void {
  if (config.env === 'test') return;
  const url = config.authUrl;
  const lines = [
    '',
    `  Gatehouse is running at ${url}  (listening on ${listeningOn}; ${config.database.kind}, ${config.sessionStrategy} sessions)`,
    `  JWKS:     ${url}/.well-known/jwks.json`,
    `  API docs: ${url}/api/docs/openapi.json`,
    config.mail.kind === 'smtp'
      ? `  Mail:     SMTP ${config.mail.smtp.host}:${config.mail.smtp.port}${config.mail.smtp.requireTls ? ' (TLS required)' : ''}`
      : `  Mail:     not sent (EMAIL_SERVER_HOST is not set); see ${url}/dev/outbox`,
  ];
  if (userCount === 0) {
    lines.push(
      '',
      '  No users yet. Create one (the password is read from standard input):',
      "    printf '%s' 'a-long-password' | npx gatehouse users create --email you@example.com --name You --role ADMIN --password-stdin",
      '  or set ADMIN_EMAIL and ADMIN_PASSWORD and restart.',
    );
  }
  lines.push(
    '',
    '  Sign in:',
    `    curl -s ${url}/api/auth -H 'content-type: application/json' \\`,
    `      -d '{"email":"you@example.com","password":"a-long-password"}'`,
    '',
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

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

  if (config.workers > 1 && !isClusterWorker()) {
    await runPrimary(config, (message) => process.stdout.write(`gatehouse: ${message}\n`)).catch((error: unknown) => {
      process.stderr.write(`Gatehouse failed to start: ${describe(error)}\n`);
      process.exit(1);
    });
    return;
  }

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
    const drain = setTimeout(() => {
      server.app.log.warn({ drainTimeoutMs: DRAIN_TIMEOUT_MS }, 'shutdown: closing connections still open after the drain period');
      server.app.server.closeAllConnections();
    }, DRAIN_TIMEOUT_MS);
    drain.unref();
    server
      .close()
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
