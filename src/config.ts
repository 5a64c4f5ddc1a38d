/**
 * The only reader of the environment. `loadConfig()` validates every variable at once, reports
 * every problem in one message, and returns a frozen `Config` that the rest of the code receives
 * as an argument.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { availableParallelism } from 'node:os';

export type SessionStrategy = 'database' | 'jwt';

export type DatabaseConfig =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string };

export interface Argon2Config {
  readonly memoryKib: number;
  readonly iterations: number;
  readonly parallelism: number;
}

export interface Config {
  readonly env: 'development' | 'production' | 'test';
  readonly isProduction: boolean;
  readonly port: number;
  readonly host: string;
  /** Public base URL without a trailing slash, e.g. `https://auth.example.com`. */
  readonly authUrl: string;
  /** True when `authUrl` is https: cookies get `Secure` and the `__Host-` prefix. */
  readonly isSecureOrigin: boolean;
  readonly authSecret: string;
  readonly dataDir: string;
  readonly database: DatabaseConfig;
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
  };
  readonly passwords: {
    readonly minLength: number;
    readonly maxLength: number;
    readonly argon2: Argon2Config;
    /** Hashes computed at once; the rest wait in a bounded queue. */
    readonly maxConcurrentHashes: number;
    readonly maxQueuedHashes: number;
    readonly queueTimeoutMs: number;
  };
  readonly admin: { readonly email: string; readonly password: string; readonly name: string } | null;
  readonly audit: {
    /** Audit events older than this are deleted by a background job. */
    readonly retentionSeconds: number;
  };
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
}

export type Env = Readonly<Record<string, string | undefined>>;

export interface LoadConfigOptions {
  /** Called for conditions worth telling the operator that do not stop start-up. */
  onWarning?: (message: string) => void;
}

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

export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}): Config {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const nodeEnv = read.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const isProduction = nodeEnv === 'production';

  const port = read.integer('PORT', 3000, { min: 0, max: 65535 });
  const host = read.string('HOST') ?? (isProduction ? '0.0.0.0' : '127.0.0.1');
  const configuredAuthUrl = read.string('AUTH_URL');
  if (configuredAuthUrl === undefined && port === 0) {
    problems.push('AUTH_URL is required when PORT=0: tokens must name the address clients reach');
  }
  const authUrl = parseAuthUrl(configuredAuthUrl ?? `http://localhost:${port}`, isProduction, problems);

  const dataDir = resolve(read.string('DATA_DIR') ?? './data');
  const database = parseDatabaseUrl(read.string('DATABASE_URL') ?? `sqlite:${join(dataDir, 'gatehouse.db')}`, problems);

  const sessionStrategy = read.oneOf('SESSION_STRATEGY', ['database', 'jwt'] as const, 'database');
  const sessionMaxAgeSeconds = read.duration('SESSION_MAX_AGE', 30 * 86_400);
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
  // In the database strategy every request checks the session row, so the token may live as long
  // as the session; in the jwt strategy the token is the only check and must be short-lived.
  const accessTokenTtlSeconds = read.duration(
    'ACCESS_TOKEN_TTL',
    sessionStrategy === 'jwt' ? 15 * 60 : sessionMaxAgeSeconds,
  );
  const audience = read.string('AUTH_AUDIENCE') ?? authUrl!;

  const passwordMinLength = read.integer('PASSWORD_MIN_LENGTH', 12, { min: 8, max: 128 });
  const passwordMaxLength = read.integer('PASSWORD_MAX_LENGTH', 256, { min: 64, max: 4096 });
  const argon2: Argon2Config = {
    memoryKib: read.integer('ARGON2_MEMORY_KIB', 19_456, { min: 1024, max: 4 * 1024 * 1024 }),
    iterations: read.integer('ARGON2_ITERATIONS', 2, { min: 1, max: 20 }),
    parallelism: read.integer('ARGON2_PARALLELISM', 1, { min: 1, max: 16 }),
  };
  const maxConcurrentHashes = read.integer('HASH_CONCURRENCY', Math.max(2, availableParallelism()), { min: 1, max: 256 });
  const maxQueuedHashes = read.integer('HASH_QUEUE_MAX', 512, { min: 0, max: 100_000 });
  const queueTimeoutMs = read.integer('HASH_QUEUE_TIMEOUT_MS', 5_000, { min: 1, max: 60_000 });

  const adminEmail = read.string('ADMIN_EMAIL');
  const adminPassword = read.string('ADMIN_PASSWORD');
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    problems.push('ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  }

  const auditRetentionSeconds = read.duration('AUDIT_RETENTION', 90 * 86_400);

  const logLevel = read.oneOf('LOG_LEVEL', LOG_LEVELS, nodeEnv === 'test' ? 'silent' : 'info');

  let authSecret = read.string('AUTH_SECRET');
  if (authSecret !== undefined && authSecret.length < MIN_SECRET_LENGTH) {
    problems.push(`AUTH_SECRET must be at least ${MIN_SECRET_LENGTH} characters (got ${authSecret.length})`);
  }
  if (authSecret === undefined && isProduction) {
    problems.push(`AUTH_SECRET is required when NODE_ENV=production (at least ${MIN_SECRET_LENGTH} random characters; e.g. \`openssl rand -base64 48\`)`);
  }

  if (problems.length > 0) throw new ConfigError(problems);

  if (authSecret === undefined) {
    authSecret = readOrCreateDevelopmentSecret(dataDir, options.onWarning);
  }

  return deepFreeze<Config>({
    env: nodeEnv,
    isProduction,
    port,
    host,
    authUrl: authUrl!,
    isSecureOrigin: authUrl!.startsWith('https://'),
    authSecret,
    dataDir,
    database: database!,
    sessionStrategy,
    tokens: { issuer: authUrl!, audience, accessTokenTtlSeconds },
    sessions: {
      maxAgeSeconds: sessionMaxAgeSeconds,
      idleTimeoutSeconds,
      touchIntervalSeconds,
      refreshReuseGraceSeconds,
      revocationSyncIntervalMs,
    },
    passwords: {
      minLength: passwordMinLength,
      maxLength: passwordMaxLength,
      argon2,
      maxConcurrentHashes,
      maxQueuedHashes,
      queueTimeoutMs,
    },
    admin:
      adminEmail !== undefined && adminPassword !== undefined
        ? { email: adminEmail, password: adminPassword, name: read.string('ADMIN_NAME') ?? 'Administrator' }
        : null,
    audit: { retentionSeconds: auditRetentionSeconds },
    logLevel,
  });
}

/** Reads typed values from the environment, collecting problems instead of throwing at the first. */
class EnvReader {
  readonly #env: Env;
  readonly #problems: string[];
  constructor(env: Env, problems: string[]) {
    this.#env = env;
    this.#problems = problems;
  }

  /** A set, non-blank value, trimmed; blank counts as unset. */
  string(name: string): string | undefined {
    const value = this.#env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  oneOf<const T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.string(name);
    if (value === undefined) return fallback;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    this.#problems.push(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
    return fallback;
  }

  integer(name: string, fallback: number, range: { min: number; max: number }): number {
    const value = this.string(name);
    if (value === undefined) return fallback;
    const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(parsed) || parsed < range.min || parsed > range.max) {
      this.#problems.push(`${name} must be an integer from ${range.min} to ${range.max} (got "${value}")`);
      return fallback;
    }
    return parsed;
  }

  /** Seconds, or a number with a unit: `900`, `90s`, `15m`, `12h`, `30d`. */
  duration(name: string, fallbackSeconds: number): number {
    const value = this.string(name);
    if (value === undefined) return fallbackSeconds;
    const match = /^(\d+)\s*([smhd]?)$/.exec(value);
    const unitSeconds = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 } as const;
    const seconds = match ? Number(match[1]) * unitSeconds[match[2] as keyof typeof unitSeconds] : Number.NaN;
    if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > 366 * 86_400) {
      this.#problems.push(`${name} must be a duration from 1s to 366d such as 900, 15m, 12h or 30d (got "${value}")`);
      return fallbackSeconds;
    }
    return seconds;
  }
}

function parseAuthUrl(value: string, isProduction: boolean, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`AUTH_URL must be an absolute http(s) URL (got "${value}")`);
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    problems.push(`AUTH_URL must use http or https (got "${url.protocol}")`);
    return undefined;
  }
  if (isProduction && url.protocol !== 'https:') {
    problems.push('AUTH_URL must be https when NODE_ENV=production');
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    problems.push('AUTH_URL must not contain credentials, a query or a fragment');
  }
  return url.origin + url.pathname.replace(/\/+$/, '');
}

function parseDatabaseUrl(value: string, problems: string[]): DatabaseConfig | undefined {
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
