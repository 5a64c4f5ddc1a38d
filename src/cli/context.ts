/**
 * What the commands that touch the database load: the configuration, storage, migrations and the
 * server's services. Imported only by those commands (`await import('./context.ts')`), never by
 * `gatehouse help` or `--version`.
 */
import { loadDotEnv, type Config } from '../config.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest, loadConfig } from '../modules.ts';
import { createServices, type Services } from '../services.ts';
import { createLogger } from '../http/logging.ts';
import type { CliIo } from './args.ts';

/** The server's configuration, from the same environment (and `.env`); warnings go to standard error. */
export function readConfig(stderr: NodeJS.WritableStream): Config {
  loadDotEnv();
  return loadConfig(process.env, { onWarning: (message) => stderr.write(`warning: ${message}\n`) });
}

/** Runs `fn` on the configured storage, migrated first when `migrate` is true; closes it after. */
export async function withStorage<T>(io: CliIo, options: { migrate: boolean }, fn: (storage: Storage, config: Config) => Promise<T>): Promise<T> {
  const config = readConfig(io.stderr);
  const storage = openStorage(config.database);
  try {
    if (options.migrate) await migrateToLatest(storage.db);
    return await fn(storage, config);
  } finally {
    await storage.close();
  }
}

/**
 * Runs `fn` with the server's wiring on the configured database (migrated first); logs go to
 * stderr, stdout stays the command's output. Changes are recorded in the audit log as made at the
 * command line (no actor, `details.via = "cli"`).
 */
export async function withServices<T>(io: CliIo, fn: (services: Services) => Promise<T>): Promise<T> {
  return withStorage(io, { migrate: true }, async (storage, config) => {
    const services = await createServices({ config, storage, logger: createLogger(config, 2) });
    try {
      return await fn(services);
    } finally {
      await services.stop();
    }
  });
}
