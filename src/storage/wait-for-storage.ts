/**
 * At start, storage may not answer yet (PostgreSQL starting beside us, a network blip): retry with
 * backoff for DATABASE_CONNECT_TIMEOUT, saying each time which database (host, port, name: never
 * the user or password) and why, then give up with an error naming it. A refusal retrying cannot
 * cure (a wrong password, a database that does not exist) fails at once. SQLite is a file: there
 * is nothing to wait for.
 */
import type { DatabaseConfig } from './storage.config.ts';
import type { Storage } from './database.ts';

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;
/** Errors worth waiting out: the server is not reachable yet, or is starting up (57P03). */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', '57P03']);

/** Where the database is, for messages: host, port and database name only. */
export function describeDatabase(config: DatabaseConfig): string {
  if (config.kind === 'sqlite') return `SQLite database ${config.path}`;
  const url = new URL(config.url);
  const host = url.hostname === '' ? 'localhost' : url.hostname;
  return `PostgreSQL at ${host}:${url.port || '5432'}${url.pathname.length > 1 ? url.pathname : ''}`;
}

/** Why a connection failed, in a few words that never quote the URL. */
function reasonOf(error: unknown): { code: string; isTransient: boolean } {
  const seen = new Set<unknown>();
  for (let current: unknown = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return { code, isTransient: TRANSIENT_CODES.has(code) };
    if (/timeout|terminated|Connection ended/i.test(current.message)) return { code: 'TIMEOUT', isTransient: true };
    if (current instanceof AggregateError) {
      const first = current.errors[0] as { code?: unknown } | undefined;
      if (typeof first?.code === 'string') return { code: first.code, isTransient: TRANSIENT_CODES.has(first.code) };
    }
  }
  return { code: 'UNKNOWN', isTransient: false };
}

export class StorageUnreachableError extends Error {}

export async function waitForStorage(
  storage: Pick<Storage, 'ping'>,
  options: { config: DatabaseConfig; timeoutMs: number; onRetry: (message: string) => void; sleep?: (ms: number) => Promise<void>; now?: () => number },
): Promise<void> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? (() => performance.now());
  const where = describeDatabase(options.config);
  const giveUpAt = now() + options.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await storage.ping();
      if (attempt > 0) options.onRetry(`${where} answers now`);
      return;
    } catch (error) {
      const { code, isTransient } = reasonOf(error);
      if (options.config.kind === 'sqlite' || !isTransient) {
        throw new StorageUnreachableError(`${where} refused the connection (${code})`, { cause: error });
      }
      const left = giveUpAt - now();
      if (left <= 0) throw new StorageUnreachableError(`${where} is not reachable after ${Math.round(options.timeoutMs / 1000)} s (${code}); giving up (DATABASE_CONNECT_TIMEOUT)`);
      const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt, left);
      options.onRetry(`${where} is not reachable (${code}); retrying in ${(delay / 1000).toFixed(1)} s, for ${Math.ceil(left / 1000)} s more`);
      await sleep(delay);
    }
  }
}
