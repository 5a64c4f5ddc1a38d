/** The sessions section of the configuration: the strategy, session lifetimes, access tokens, and where sessions' places come from. */
import { isAbsolute, resolve } from 'node:path';
import type { ConfigSection } from '../config.ts';
import { parseDatabaseUrl } from '../storage/storage.config.ts';
import { placeDatabaseProblem } from './place.ts';

export type SessionStrategy = 'database' | 'jwt';

declare module '../config.ts' {
  interface Config {
    readonly sessionStrategy: SessionStrategy;
    readonly tokens: {
      readonly issuer: string;
      readonly audience: string;
      readonly accessTokenTtlSeconds: number;
    };
    readonly sessions: {
      readonly maxAgeSeconds: number;
      /** A session unused for this long ends, whatever its absolute expiry. */
      readonly idleTimeoutSeconds: number;
      /** Sliding expiry writes `last_seen_at` at most this often per session. */
      readonly touchIntervalSeconds: number;
      /** How long a just-rotated refresh token is still honoured (concurrent tabs). */
      readonly refreshReuseGraceSeconds: number;
      /** jwt strategy: how often each instance pulls revocations made by the others. */
      readonly revocationSyncIntervalMs: number;
      /**
       * SESSION_CHECK_CACHE: how many sessions' check reads each instance keeps (the database
       * strategy's checks; on SQLite also the jwt strategy's current roles for admin routes;
       * session-check-cache.ts); 0: none, every check reads storage. Default 10,000 on a SQLite
       * file (a kept read is used only while nothing was committed since), 0 on PostgreSQL (on,
       * database strategy only, it announces every change through NOTIFY).
       */
      readonly checkCacheSize: number;
      /**
       * GEOIP_DATABASE_FILE: a local MaxMind DB (.mmdb) file, as an absolute path, that names the
       * approximate place of a session's address on the pages (place.ts); null: no places.
       */
      readonly geoipDatabaseFile: string | null;
    };
  }
}

/** SESSION_CHECK_CACHE's default on a SQLite file: sessions whose check reads are kept. */
export const DEFAULT_SQLITE_CHECK_CACHE = 10_000;

/** The sessions module's section: `sessionStrategy`, `sessions` and `tokens` (issued by AUTH_URL). */
export const sessionsConfigSection: ConfigSection = (read, { authUrl }, problems) => {
  const sessionStrategy = read.oneOf('SESSION_STRATEGY', ['database', 'jwt'] as const, 'database');
  const maxAgeSeconds = read.duration('SESSION_MAX_AGE', 30 * 86_400);
  const idleTimeoutSeconds = read.duration('SESSION_IDLE_TIMEOUT', 7 * 86_400);
  const touchIntervalSeconds = read.duration('SESSION_TOUCH_INTERVAL', 5 * 60);
  const refreshReuseGraceSeconds = read.duration('REFRESH_REUSE_GRACE', 10);
  if (refreshReuseGraceSeconds > 60) {
    problems.push('REFRESH_REUSE_GRACE must be at most 60s: longer would let a stolen refresh token go unnoticed');
  }
  if (touchIntervalSeconds * 2 > idleTimeoutSeconds) {
    problems.push('SESSION_TOUCH_INTERVAL must be at most half of SESSION_IDLE_TIMEOUT, or sessions in use would time out');
  }
  const revocationSyncIntervalMs = read.integer('REVOCATION_SYNC_INTERVAL_MS', 1_000, { min: 100, max: 60_000 });
  // On a SQLite file the cache costs one PRAGMA per check and can miss nothing (any commit drops
  // it), so it is on by default there; on PostgreSQL it adds a NOTIFY to every change: asked for.
  // The URL as storage parses it (its own problems are reported by the core configuration).
  const database = parseDatabaseUrl(read.string('DATABASE_URL') ?? 'sqlite:./data/gatehouse.db', []);
  const isSqliteFile = database?.kind === 'sqlite' && database.path !== ':memory:';
  const checkCacheSize = read.integer('SESSION_CHECK_CACHE', isSqliteFile ? DEFAULT_SQLITE_CHECK_CACHE : 0, { min: 0, max: 1_000_000 });
  // On SQLite the jwt strategy keeps the current-roles reads of admin routes; on PostgreSQL the
  // announcements are the database strategy's.
  if (checkCacheSize > 0 && sessionStrategy !== 'database' && !isSqliteFile) problems.push('SESSION_CHECK_CACHE on PostgreSQL is for SESSION_STRATEGY=database: the jwt strategy reads no session to keep');
  // An in-memory database has one connection: no second one to read the change counter on.
  if (checkCacheSize > 0 && database?.kind === 'sqlite' && !isSqliteFile) problems.push('SESSION_CHECK_CACHE needs PostgreSQL or a SQLite file (not sqlite::memory:): it reads what changed on a second connection');
  // Minutes in both strategies. Gatehouse itself checks the session row on every request in the
  // database strategy, but a downstream app verifying tokens offline (gatehouse-protect with its
  // defaults) cannot: a token it accepts must stop working soon after sign-out there too. Sessions
  // stay long through refresh (browsers refresh transparently with the refresh cookie).
  const accessTokenTtlSeconds = read.duration('ACCESS_TOKEN_TTL', 15 * 60);
  const audience = read.string('AUTH_AUDIENCE') ?? authUrl!;
  const geoipDatabaseFile = readGeoipDatabaseFile(read.string('GEOIP_DATABASE_FILE'), read.string('DATA_DIR'), problems);
  return {
    sessionStrategy,
    tokens: { issuer: authUrl!, audience, accessTokenTtlSeconds },
    sessions: { maxAgeSeconds, idleTimeoutSeconds, touchIntervalSeconds, refreshReuseGraceSeconds, revocationSyncIntervalMs, checkCacheSize, geoipDatabaseFile },
  };
};

/** An absolute path, or one under DATA_DIR like the other files Gatehouse reads; checked now, so a wrong one stops the start. */
function readGeoipDatabaseFile(value: string | undefined, dataDir: string | undefined, problems: string[]): string | null {
  if (value === undefined) return null;
  const file = isAbsolute(value) ? value : resolve(dataDir ?? './data', value);
  const problem = placeDatabaseProblem(file);
  if (problem !== null) problems.push(`GEOIP_DATABASE_FILE: ${problem}`);
  return file;
}
