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
import { EnvReader, hasExtraUrlParts, toBaseUrl, type Env, type RateLimit } from './config/env-reader.ts';
import { parseConnectionLimits, parseCorsOrigins, parseTrustProxy, type ConnectionLimits, type TrustProxy } from './http/http.config.ts';
import { parseDatabaseUrl, type DatabaseConfig } from './storage/storage.config.ts';

// The sections' types, for the modules that receive them as part of `Config`.
export type { Env, RateLimit } from './config/env-reader.ts';
export type { ConnectionLimits, TrustProxy } from './http/http.config.ts';
export type { DatabaseConfig } from './storage/storage.config.ts';

export type SessionStrategy = 'database' | 'jwt';

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
    /** zxcvbn score (0-4) a new password must reach. */
    readonly minScore: number;
    readonly argon2: Argon2Config;
    /** Hashes computed at once; the rest wait in a bounded queue. */
    readonly maxConcurrentHashes: number;
    readonly maxQueuedHashes: number;
    readonly queueTimeoutMs: number;
    /** Nice value of the thread pool that hashes run on (Linux): above 0, the event loop comes first. */
    readonly hashThreadNice: number;
  };
  readonly admin: { readonly email: string; readonly password: string; readonly name: string } | null;
  readonly accounts: {
    /** Self-service sign-up (`POST /api/auth/signup`, `/auth/signup`). */
    readonly allowSignup: boolean;
    /** Sign-in refuses (403 EMAIL_NOT_VERIFIED, after a correct password) until the address is verified. */
    readonly requireEmailVerification: boolean;
    readonly resetTokenTtlSeconds: number;
    readonly verificationTokenTtlSeconds: number;
  };
  readonly rateLimits: {
    /** Every sign-in attempt (password, either endpoint), per client IP: stops floods. */
    readonly signinPerIp: RateLimit;
    /** Failed sign-ins per client IP: people at one office address who sign in correctly never count. */
    readonly signinFailuresPerIp: RateLimit;
    readonly signupPerIp: RateLimit;
    /** Mails asked for (forgot-password, verification resend), per address and per client IP. */
    readonly mailPerAddress: RateLimit;
    readonly mailPerIp: RateLimit;
    /** Uses of mailed tokens (reset, validate, verify), per client IP. */
    readonly tokenPerIp: RateLimit;
    readonly refreshPerIp: RateLimit;
    /** Provider sign-in and link starts, per client IP. */
    readonly oauthPerIp: RateLimit;
    /** New passwords refused by the policy, per account (change-password, reset links) and per client IP (everywhere). */
    readonly passwordRefusalsPerAccount: RateLimit;
    readonly passwordRefusalsPerIp: RateLimit;
  };
  /** Per account (normalised address): consecutive failed sign-ins. */
  readonly signinThrottle: {
    /** Failures allowed before each further attempt must wait (1 s, doubling, up to `maxDelaySeconds`). */
    readonly delayAfterFailures: number;
    readonly maxDelaySeconds: number;
    /** At this many consecutive failures the password is locked until a reset (SP 800-63B-4: at most 100). */
    readonly lockAfterFailures: number;
  };
  /** Shared counters live here when set (else in storage). */
  readonly redisUrl: string | null;
  readonly trustProxy: TrustProxy;
  /** Origins allowed to call the JSON API from a browser (CORS), without cookies. Empty: CORS off. */
  readonly corsOrigins: readonly string[];
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
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
  // SQLite's default page cache (2 MB) stops holding a varied set of sessions once the tables are
  // large: at 1,000,000 sessions, 2,000 different session checks cost 27 µs each against 20 µs with
  // 32 MB (perf/analysis.md, growth). Pages are cached as they are read, so a small store uses less.
  const database =
    parsedDatabase?.kind === 'postgres'
      ? { ...parsedDatabase, queryTimeoutMs }
      : parsedDatabase && { ...parsedDatabase, cacheMib: read.integer('SQLITE_CACHE_MB', 32, { min: 1, max: 4_096 }) };

  if (workers > 1 && database?.kind === 'sqlite' && database.path === ':memory:') {
    problems.push('WORKERS must be 1 with an in-memory SQLite database: each process would have a database of its own');
  }
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

  // 8 is SP 800-63B-4's floor with a second factor; it asks 15 of password-only deployments.
  const passwordMinLength = read.integer('PASSWORD_MIN_LENGTH', 8, { min: 8, max: 128 });
  const passwordMinScore = read.integer('PASSWORD_MIN_SCORE', 3, { min: 0, max: 4 });
  const passwordMaxLength = read.integer('PASSWORD_MAX_LENGTH', 256, { min: 128, max: 4096 });
  const argon2: Argon2Config = {
    memoryKib: read.integer('ARGON2_MEMORY_KIB', 19_456, { min: 1024, max: 4 * 1024 * 1024 }),
    iterations: read.integer('ARGON2_ITERATIONS', 2, { min: 1, max: 20 }),
    parallelism: read.integer('ARGON2_PARALLELISM', 1, { min: 1, max: 16 }),
  };
  const maxConcurrentHashes = read.integer('HASH_CONCURRENCY', Math.max(2, availableParallelism()), { min: 1, max: 256 });
  const maxQueuedHashes = read.integer('HASH_QUEUE_MAX', 512, { min: 0, max: 100_000 });
  const queueTimeoutMs = read.integer('HASH_QUEUE_TIMEOUT_MS', 5_000, { min: 1, max: 60_000 });
  const hashThreadNice = read.integer('HASH_THREAD_NICE', 10, { min: 0, max: 19 });

  const adminEmail = read.string('ADMIN_EMAIL');
  const adminPassword = read.string('ADMIN_PASSWORD');
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    problems.push('ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  }

  const rateLimits = {
    signinPerIp: read.rateLimit('RATE_LIMIT_SIGNIN_PER_IP', { points: 60, durationSeconds: 60 }),
    signinFailuresPerIp: read.rateLimit('RATE_LIMIT_SIGNIN_FAILURES_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
    signupPerIp: read.rateLimit('RATE_LIMIT_SIGNUP_PER_IP', { points: 10, durationSeconds: 3_600 }),
    mailPerAddress: read.rateLimit('RATE_LIMIT_MAIL_PER_ADDRESS', { points: 3, durationSeconds: 3_600 }),
    mailPerIp: read.rateLimit('RATE_LIMIT_MAIL_PER_IP', { points: 20, durationSeconds: 3_600 }),
    tokenPerIp: read.rateLimit('RATE_LIMIT_TOKEN_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
    refreshPerIp: read.rateLimit('RATE_LIMIT_REFRESH_PER_IP', { points: 120, durationSeconds: 60 }),
    oauthPerIp: read.rateLimit('RATE_LIMIT_OAUTH_PER_IP', { points: 30, durationSeconds: 60 }),
    // New passwords the policy refused (sign-up, reset, change, admin create): each costs an
    // estimate of up to half a second in the one estimator worker. A person finds an acceptable
    // password in a few tries; these bound what one account or one address can spend on refusals.
    passwordRefusalsPerAccount: read.rateLimit('RATE_LIMIT_PASSWORD_REFUSALS_PER_ACCOUNT', { points: 10, durationSeconds: 15 * 60 }),
    passwordRefusalsPerIp: read.rateLimit('RATE_LIMIT_PASSWORD_REFUSALS_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
  };
  const signinThrottle = {
    delayAfterFailures: read.integer('SIGNIN_DELAY_AFTER_FAILURES', 5, { min: 1, max: 100 }),
    maxDelaySeconds: read.duration('SIGNIN_MAX_DELAY', 15 * 60),
    lockAfterFailures: read.integer('SIGNIN_LOCK_AFTER_FAILURES', 100, { min: 10, max: 100 }),
  };
  const redisUrl = parseRedisUrl(read.string('REDIS_URL'), problems);
  const trustProxy = parseTrustProxy(read.string('TRUST_PROXY'), problems);
  const corsOrigins = parseCorsOrigins(read.string('CORS_ORIGINS'), problems);

  const logLevel = read.oneOf('LOG_LEVEL', LOG_LEVELS, nodeEnv === 'test' ? 'silent' : 'info');

  let authSecret = read.string('AUTH_SECRET');
  if (authSecret !== undefined && authSecret.length < MIN_SECRET_LENGTH) {
    problems.push(`AUTH_SECRET must be at least ${MIN_SECRET_LENGTH} characters (got ${authSecret.length})`);
  }
  if (authSecret === undefined && isProduction) {
    problems.push(`AUTH_SECRET is required when NODE_ENV=production (at least ${MIN_SECRET_LENGTH} random characters; e.g. \`openssl rand -base64 48\`)`);
  }

  const accounts = {
    allowSignup: read.boolean('ALLOW_SIGNUP', true),
    requireEmailVerification: read.boolean('REQUIRE_EMAIL_VERIFICATION', false),
    resetTokenTtlSeconds: read.duration('RESET_TOKEN_TTL', 30 * 60),
    verificationTokenTtlSeconds: read.duration('VERIFICATION_TOKEN_TTL', 24 * 3_600),
  };

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
      minScore: passwordMinScore,
      argon2,
      maxConcurrentHashes,
      maxQueuedHashes,
      queueTimeoutMs,
      hashThreadNice,
    },
    admin:
      adminEmail !== undefined && adminPassword !== undefined
        ? { email: adminEmail, password: adminPassword, name: read.string('ADMIN_NAME') ?? 'Administrator' }
        : null,
    accounts,
    rateLimits,
    signinThrottle,
    redisUrl,
    trustProxy,
    corsOrigins,
    logLevel,
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
