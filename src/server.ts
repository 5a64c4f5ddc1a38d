/**
 * One Gatehouse server: open storage -> migrate -> wire services -> build app -> listen. `main.ts`
 * runs it in a single process or in each cluster worker; the cluster's primary never loads it.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { openStorage } from './storage/database.ts';
import { waitForStorage } from './storage/wait-for-storage.ts';
import { migrateToLatest } from './modules.ts';
import { createServices } from './services.ts';
import { buildApp } from './app.ts';
import { bootstrapAdmin } from './credentials/bootstrap-admin.ts';
import { workerIndex } from './cluster.ts';
import { lowerThreadPoolPriority } from './lib/thread-pool-priority.ts';
import { RUNS_FROM } from './lib/runs-from.ts';
import { createIdleMemoryRelease } from './lib/idle-memory-release.ts';
import { requestsBegunInProcess } from './http/logging.ts';

export interface RunningServer {
  app: FastifyInstance;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const storage = openStorage(config.database);
  try {
    await waitForStorage(storage, { config: config.database, timeoutMs: config.databaseConnectTimeoutSeconds * 1000, onRetry: (message) => process.stderr.write(`gatehouse: ${message}\n`) });
    await migrateToLatest(storage.db);
    const services = await createServices({ config, storage });
    const app = await buildApp(services);
    const adminResult = await bootstrapAdmin(services);
    if (adminResult === 'created') app.log.info({ email: config.admin?.email }, 'created the ADMIN user from ADMIN_EMAIL');

    if (config.passwords.hashThreadNice > 0) {
      const threads = await lowerThreadPoolPriority(config.passwords.hashThreadNice);
      app.log.info({ nice: config.passwords.hashThreadNice, threads }, threads === null ? 'hash threads keep their priority: this system does not let them be lowered' : 'hash threads run below the event loop');
    }
    const address = await app.listen({ port: config.port, host: config.host });
    app.log.info({ address, database: config.database.kind, sessionStrategy: config.sessionStrategy, runsFrom: RUNS_FROM }, 'Gatehouse listening');
    // With WORKERS > 1, every worker listens; the first one tells the operator.
    if (workerIndex() === 0) {
      // Whether to say how to create the first account. Read as one row: a count of every user took
      // past the statement timeout at 10,000,000 users on a cold cache and failed the start. A
      // failed read leaves the hint out; it never fails a server that is already listening.
      printBanner(config, address, await services.users.hasAnyUser().catch(() => true));
    }

    const memoryRelease =
      config.idleMemoryReleaseSeconds === null
        ? null
        : createIdleMemoryRelease({
            quietMs: config.idleMemoryReleaseSeconds * 1000,
            onRelease: ({ rssBeforeBytes, rssAfterBytes, pauseMs }) =>
              app.log.info({ rssBeforeMb: toMb(rssBeforeBytes), rssAfterMb: toMb(rssAfterBytes), pauseMs: Math.round(pauseMs) }, 'idle memory released'),
            onFailure: (error) => app.log.warn({ err: error }, 'idle memory release is off: it failed once'),
            activity: requestsBegunInProcess,
          });
    memoryRelease?.start();

    return {
      app,
      async close() {
        memoryRelease?.stop();
        await app.close();
        await storage.close();
      },
    };
  } catch (error) {
    await storage.close().catch(() => {});
    throw error;
  }
}

const toMb = (bytes: number) => Math.round(bytes / 104_857.6) / 10;

function printBanner(config: Config, listeningOn: string, hasUsers: boolean): void {
  if (config.env === 'test') return;
  const url = config.authUrl;
  const lines = [
    '',
    `  Gatehouse is running at ${url}  (listening on ${listeningOn}; ${config.database.kind}, ${config.sessionStrategy} sessions)`,
    `  JWKS:     ${url}/.well-known/jwks.json`,
    `  API docs: ${url}/api/docs`,
    config.mail.kind === 'smtp'
      ? `  Mail:     SMTP ${config.mail.smtp.host}:${config.mail.smtp.port}${config.mail.smtp.requireTls ? ' (TLS required)' : ''}`
      : config.mail.showOutboxPage
        ? `  Mail:     not sent (EMAIL_SERVER_HOST is not set); see ${url}/dev/outbox`
        : '  Mail:     not sent (EMAIL_SERVER_HOST is not set); links are logged, and DEV_OUTBOX_PAGE=true lists them at /dev/outbox',
  ];
  if (!hasUsers) {
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
  // Standard error: standard output carries the JSON log lines only, for collectors to parse.
  process.stderr.write(`${lines.join('\n')}\n`);
}

