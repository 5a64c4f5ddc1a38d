/**
 * What of a benchmark result is written to `perf/results/`: the figures and the settings that
 * shape them, never a secret (AUTH_SECRET, the admin's password) nor a local path (PATH, temporary
 * directories, the database file), a port or a process id, which say nothing about the figures and
 * change every run.
 */

/** Keys left out wherever they appear. */
const OMITTED = new Set([
  'PATH',
  'AUTH_SECRET',
  'authSecret',
  'ADMIN_PASSWORD',
  'ADMIN_EMAIL',
  'admin',
  'password',
  'DATA_DIR',
  'dataDir',
  'probeDir',
  'BENCH_PROBE_DIR',
  'AUTH_URL',
  'PORT',
  'HOST',
  'pid',
  'url',
  'store',
  // A run's subject (its app and its load: a bearer token, a client secret in a header) is never
  // a figure; scenarios.ts `record` leaves it out, and this catches one that would not.
  'app',
  'spec',
  'headers',
  'authorization',
  'token',
  'secret',
]);

/** A JSON.stringify replacer: omits the keys above, and keeps of a database URL only its kind. */
export function publishable(key: string, value: unknown): unknown {
  if (OMITTED.has(key)) return undefined;
  if ((key === 'DATABASE_URL' || key === 'databaseUrl') && typeof value === 'string') return value.split(':')[0];
  return value;
}
