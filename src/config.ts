/**
 * The only reader of the environment. `readConfig()` reads the core's variables and every
 * module's config section (`modules.ts`'s `loadConfig` passes them all), validates them at once,
 * reports every problem in one message, and returns a frozen `Config` that the rest of the code
 * receives as an argument. A module's section adds its key to `Config` where it is declared:
 *
 *   declare module '../config.ts' {
 *     interface Config { readonly mfa: MfaConfig }
 *   }
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import { EnvReader, hasExtraUrlParts, toBaseUrl, type Env } from './config/env-reader.ts';
import { parseConnectionLimits, parseCorsOrigins, parseTrustedOrigins, parseTrustProxy, type ConnectionLimits, type TrustProxy } from './http/http.config.ts';
import { parseDatabaseUrl, type DatabaseConfig } from './storage/storage.config.ts';

// The sections' types, for the modules that receive them as part of `Config`.
export type { Env, RateLimit } from './config/env-reader.ts';
export type { ConnectionLimits, TrustProxy } from './http/http.config.ts';
export type { DatabaseConfig } from './storage/storage.config.ts';

export interface Config {
  readonly env: 'development' | 'production' | 'test';
  readonly isProduction: boolean;
  readonly port: number;
  readonly host: string;
  /** Server processes sharing the port (`node:cluster`); 1 runs a single process. */
  readonly workers: number;
  readonly connections: ConnectionLimits;
  /** Public base URL without a trailing slash, e.g. `https://auth.example.com`. */
  readonly authUrl: string;
  /** True when `authUrl` is https: cookies get `Secure` and the `__Host-` prefix. */
  readonly isSecureOrigin: boolean;
  readonly authSecret: string;
  readonly dataDir: string;
  readonly database: DatabaseConfig;
  /** At start, how long an unreachable PostgreSQL is retried (with backoff) before giving up. */
  readonly databaseConnectTimeoutSeconds: number;
  /** Shared counters live here when set (else in storage). */
  readonly redisUrl: string | null;
  readonly trustProxy: TrustProxy;
  /** Origins allowed to call the JSON API from a browser (CORS), without cookies. Empty: CORS off. */
  readonly corsOrigins: readonly string[];
  /**
   * Origins a sign-in's `callbackUrl` may name absolutely (exact origins, e.g. an app on a sibling
   * subdomain); anything else must be a path of ours. Empty: only paths of ours.
   */
  readonly trustedOrigins: readonly string[];
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json` (one JSON object a line, for collectors) or `pretty` (for a person at a terminal). */
  readonly logFormat: 'json' | 'pretty';
  /** How long a process must be idle before it gives memory a busy spell left behind back (lib/idle-memory-release.ts); null: never. */
  readonly idleMemoryReleaseSeconds: number | null;
}

export interface LoadConfigOptions {
  /** Called for conditions worth telling the operator that do not stop start-up. */
  onWarning?: (message: string) => void;
}

/** What a module's config section may depend on: read before every section. */
export interface ConfigBasis {
  readonly env: Config['env'];
  readonly isProduction: boolean;
  /** Undefined when AUTH_URL itself is invalid (already reported). */
  readonly authUrl: string | undefined;
}

/**
 * A module's part of the configuration: reads its variables with `read` (whose problems are
 * reported with everyone else's) and returns its key(s) of `Config`. Invalid values are reported,
 * not thrown; what it returns then is never used.
 */
export type ConfigSection = (read: EnvReader, basis: ConfigBasis, problems: string[]) => Partial<Config>;

/** Thrown by `loadConfig` with every problem found; `problems` lists them one per entry. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export const MIN_SECRET_LENGTH = 32;
const AUTH_SECRET_FILE = 'auth-secret';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Reads `.env` from the working directory, if there is one, without overriding real env vars. */
export function loadDotEnv(path = '.env'): void {
  try {
    process.loadEnvFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

export function readConfig(env: Env, options: LoadConfigOptions & { sections?: readonly ConfigSection[] } = {}): Config {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const nodeEnv = read.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const isProduction = nodeEnv === 'production';

  const port = read.integer('PORT', 3000, { min: 0, max: 65535 });
  const host = read.string('HOST') ?? (isProduction ? '0.0.0.0' : '127.0.0.1');
  const workers = read.integer('WORKERS', isProduction ? availableParallelism() : 1, { min: 1, max: 64 });
  const connections = parseConnectionLimits(read, problems);
  const configuredAuthUrl = read.string('AUTH_URL');
  if (configuredAuthUrl === undefined && port === 0) {
    problems.push('AUTH_URL is required when PORT=0: tokens must name the address clients reach');
  }
  const authUrl = parseAuthUrl(configuredAuthUrl ?? `http://localhost:${port}`, isProduction, problems);

  const dataDir = resolve(read.string('DATA_DIR') ?? './data');
  const parsedDatabase = parseDatabaseUrl(read.string('DATABASE_URL') ?? `sqlite:${join(dataDir, 'gatehouse.db')}`, problems);
  // A PostgreSQL that accepts connections but never answers (a partition, a frozen host) would
  // otherwise hold every request that touches it, and the pool with it, until the path returns.
  const queryTimeoutMs = read.integer('DATABASE_QUERY_TIMEOUT_MS', 5_000, { min: 100, max: 600_000 });
  // Per process: a cluster of WORKERS opens WORKERS times as many, and PostgreSQL's own limit
  // (max_connections, 100 by default) is shared by every instance.
  const databasePoolSize = read.integer('DATABASE_POOL_SIZE', 10, { min: 2, max: 1_000 });
  // At start: how long an unreachable PostgreSQL is waited for (it may be starting beside us).
  const databaseConnectTimeoutSeconds = read.duration('DATABASE_CONNECT_TIMEOUT', 30);
  // SQLite's default page cache (2 MB) stops holding a varied set of sessions once the tables are
  // large: at 1,000,000 sessions, 2,000 different session checks cost 27 µs each against 20 µs with
  // 32 MB (perf/analysis.md, growth). Pages are cached as they are read, so a small store uses less.
  const database =
    parsedDatabase?.kind === 'postgres'
      ? { ...parsedDatabase, queryTimeoutMs, poolSize: databasePoolSize }
      : parsedDatabase && { ...parsedDatabase, cacheMib: read.integer('SQLITE_CACHE_MB', 32, { min: 1, max: 4_096 }) };

  if (workers > 1 && database?.kind === 'sqlite' && database.path === ':memory:') {
    problems.push('WORKERS must be 1 with an in-memory SQLite database: each process would have a database of its own');
  }
  const redisUrl = parseRedisUrl(read.string('REDIS_URL'), problems);
  const trustProxy = parseTrustProxy(read.string('TRUST_PROXY'), problems);
  const corsOrigins = parseCorsOrigins(read.string('CORS_ORIGINS'), problems);
  const trustedOrigins = parseTrustedOrigins(read.string('TRUSTED_ORIGINS'), problems);

  const logLevel = read.oneOf('LOG_LEVEL', LOG_LEVELS, nodeEnv === 'test' ? 'silent' : 'info');
  const logFormat = read.oneOf('LOG_FORMAT', ['json', 'pretty'] as const, 'json');
  const idleMemoryReleaseSeconds = /^off$/i.test(read.string('IDLE_MEMORY_RELEASE') ?? '') ? null : read.duration('IDLE_MEMORY_RELEASE', 5, 'or off');

  let authSecret = read.string('AUTH_SECRET');
  if (authSecret !== undefined && authSecret.length < MIN_SECRET_LENGTH) {
    problems.push(`AUTH_SECRET must be at least ${MIN_SECRET_LENGTH} characters (got ${authSecret.length})`);
  }
  if (authSecret === undefined && isProduction) {
    problems.push(`AUTH_SECRET is required when NODE_ENV=production (at least ${MIN_SECRET_LENGTH} random characters; e.g. \`openssl rand -base64 48\`)`);
  }

  const basis: ConfigBasis = { env: nodeEnv, isProduction, authUrl };
  const sections: Partial<Config>[] = (options.sections ?? []).map((section) => section(read, basis, problems));

  if (problems.length > 0) throw new ConfigError(problems);

  if (authSecret === undefined) {
    authSecret = readOrCreateDevelopmentSecret(dataDir, options.onWarning);
  }

  return deepFreeze<Config>({
    ...(Object.assign({}, ...sections) as Config),
    env: nodeEnv,
    isProduction,
    port,
    host,
    workers,
    connections,
    authUrl: authUrl!,
    isSecureOrigin: authUrl!.startsWith('https://'),
    authSecret,
    dataDir,
    database: database!,
    databaseConnectTimeoutSeconds,
    redisUrl,
    trustProxy,
    corsOrigins,
    trustedOrigins,
    logLevel,
    logFormat,
    idleMemoryReleaseSeconds,
  });
}

function parseRedisUrl(value: string | undefined, problems: string[]): string | null {
  if (value === undefined) return null;
  try {
    const url = new URL(value);
    if (url.protocol === 'redis:' || url.protocol === 'rediss:') return value;
  } catch {
    // reported below
  }
  problems.push('REDIS_URL must be a redis:// or rediss:// URL');
  return null;
}

function parseAuthUrl(value: string, isProduction: boolean, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // Never the value itself: it may hold credentials.
    problems.push('AUTH_URL must be an absolute http(s) URL');
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    problems.push(`AUTH_URL must use http or https (got "${url.protocol}")`);
    return undefined;
  }
  if (isProduction && url.protocol !== 'https:') {
    problems.push('AUTH_URL must be https when NODE_ENV=production');
  }
  if (hasExtraUrlParts(url)) {
    problems.push('AUTH_URL must not contain credentials, a query or a fragment');
  }
  return toBaseUrl(url);
}

/**
 * Development convenience: a secret generated once and kept in DATA_DIR, so tokens and encrypted
 * keys survive restarts. Never used in production (loadConfig refuses to start without one there).
 */
function readOrCreateDevelopmentSecret(dataDir: string, onWarning?: (message: string) => void): string {
  const path = join(dataDir, AUTH_SECRET_FILE);
  try {
    const existing = readFileSync(path, 'utf8').trim();
    if (existing.length >= MIN_SECRET_LENGTH) return existing;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(path, `${secret}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  onWarning?.(`AUTH_SECRET is not set: generated one into ${path}. Set AUTH_SECRET yourself before going to production.`);
  return secret;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
