/** The storage section of the configuration: DATABASE_URL. */
import { isAbsolute, resolve } from 'node:path';

export type DatabaseConfig =
  | {
      readonly kind: 'sqlite';
      readonly path: string;
      /** SQLite's page cache per connection (SQLITE_CACHE_MB). Absent: SQLite's own 2 MB. */
      readonly cacheMib?: number;
    }
  | {
      readonly kind: 'postgres';
      readonly url: string;
      /**
       * How long a query may go without an answer before it fails as "unavailable" and its
       * connection is dropped (DATABASE_QUERY_TIMEOUT_MS). Absent: no bound (scripts, bulk loads).
       */
      readonly queryTimeoutMs?: number;
      /** Most connections this process opens to PostgreSQL (DATABASE_POOL_SIZE). Absent: 10. */
      readonly poolSize?: number;
    };

export function parseDatabaseUrl(value: string, problems: string[]): DatabaseConfig | undefined {
  if (value.startsWith('sqlite:')) {
    const rest = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (rest === ':memory:') return { kind: 'sqlite', path: ':memory:' };
    if (rest === '' || rest.includes('\0')) {
      problems.push(`DATABASE_URL must name a file: sqlite:<path> (got "${value}")`);
      return undefined;
    }
    return { kind: 'sqlite', path: isAbsolute(rest) ? rest : resolve(rest) };
  }
  if (/^postgres(ql)?:\/\//.test(value)) {
    try {
      new URL(value);
      return { kind: 'postgres', url: value };
    } catch {
      problems.push('DATABASE_URL is not a valid postgres:// URL');
      return undefined;
    }
  }
  problems.push('DATABASE_URL must be sqlite:<path> or postgres://user@host:port/database');
  return undefined;
}
