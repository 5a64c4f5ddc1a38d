/**
 * The only reader of the environment. `loadConfig()` validates every variable at once, reports
 * every problem in one message, and returns a frozen `Config` that the rest of the code receives
 * as an argument.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import { isIP, isIPv4, isIPv6 } from 'node:net';

export type SessionStrategy = 'database' | 'jwt';

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
    };

export interface Argon2Config {
  readonly memoryKib: number;
  readonly iterations: number;
  readonly parallelism: number;
}

/** A mailbox: the address, and the display name shown with it, if any. */
export interface MailAddress {
  readonly name: string | null;
  readonly address: string;
}

export interface SmtpConfig {
  readonly host: string;
  readonly port: number;
  /** Port 465: TLS from the first byte. Other ports start in clear and upgrade with STARTTLS when offered. */
  readonly isImplicitTls: boolean;
  /** Refuse to send over an unencrypted connection: true for every host but a loopback relay. */
  readonly requireTls: boolean;
  /** Present only when EMAIL_SERVER_USER is set. Never log it. */
  readonly auth: { readonly user: string; readonly password: string } | null;
}

interface MailSettings {
  readonly from: MailAddress;
  /** Tries per message before it is marked failed. */
  readonly maxAttempts: number;
  /** How often the outbox worker looks for due messages (it is also woken by each enqueue). */
  readonly pollIntervalMs: number;
  /** Sent and failed messages older than this are deleted. */
  readonly retentionSeconds: number;
}

/**
 * `smtp` when EMAIL_SERVER_HOST is set; otherwise `dev-outbox` (never in production): messages
 * stay in the outbox table and are listed at `/dev/outbox`. Features that cannot work without
 * real mail (password reset, sign-up) check `kind`.
 */
export type MailConfig =
  | (MailSettings & { readonly kind: 'smtp'; readonly smtp: SmtpConfig; readonly showOutboxPage: false })
  | (MailSettings & {
      readonly kind: 'dev-outbox';
      readonly smtp: null;
      /**
       * `/dev/outbox` is served (DEV_OUTBOX_PAGE, off by default). It shows live reset links, and
       * whether a request really comes from this machine cannot be known behind a local proxy or
       * tunnel that adds no forwarding header, so it is never on by accident.
       */
      readonly showOutboxPage: boolean;
    });

/**
 * An OAuth / OpenID Connect provider, enabled by its client id and secret. `github` speaks plain
 * OAuth 2.0 and reads the profile from GitHub's REST API; `oidc` providers are found by discovery
 * and prove the user with an ID token.
 */
export type OAuthProviderConfig =
  | {
      readonly id: 'github';
      readonly kind: 'github';
      readonly name: string;
      readonly clientId: string;
      /** Never log it. */
      readonly clientSecret: string;
      /** GitHub, or GitHub Enterprise Server: `${url}/login/oauth/authorize` and `/login/oauth/access_token`. */
      readonly url: string;
      /** The REST API root: `${apiUrl}/user` and `/user/emails`. */
      readonly apiUrl: string;
    }
  | {
      readonly id: 'google' | 'oidc';
      readonly kind: 'oidc';
      readonly name: string;
      readonly clientId: string;
      /** Never log it. */
      readonly clientSecret: string;
      /** The issuer identifier; its `/.well-known/openid-configuration` is fetched on first use. */
      readonly issuer: string;
    };

/** A rate limit: at most `points` in a window of `durationSeconds` (env syntax `60/1m`). */
export interface RateLimit {
  readonly points: number;
  readonly durationSeconds: number;
}

/**
 * Who the client is: the socket's address, unless requests come through trusted proxies. `false`
 * trusts no forwarding header; a number trusts that many hops of `X-Forwarded-For`; a list trusts
 * forwarding only from those addresses or CIDR ranges (names `loopback`, `linklocal`, `uniquelocal`).
 */
export type TrustProxy = false | number | readonly string[];

/**
 * What one client connection may hold. Without bounds, a client trickling its body a byte at a
 * time keeps its connection (a file descriptor) open indefinitely, and enough of them lock
 * everyone else out.
 */
export interface ConnectionLimits {
  /** The request line and headers must arrive within this long of the request's first byte (or of the connection's opening). */
  readonly headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this long of its first byte. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long without a new request. */
  readonly keepAliveTimeoutMs: number;
  /** Connections open at once, per server process; further ones are closed as soon as they are accepted. */
  readonly maxConnections: number;
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
  readonly audit: {
    /** Audit events older than this are deleted by a background job. */
    readonly retentionSeconds: number;
  };
  readonly mail: MailConfig;
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
  readonly oauth: {
    /** In the order they are shown on the sign-in page. */
    readonly providers: readonly OAuthProviderConfig[];
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
  // 32 MB (bench/analysis.md, growth). Pages are cached as they are read, so a small store uses less.
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

  const auditRetentionSeconds = read.duration('AUDIT_RETENTION', 90 * 86_400);
  const mail = parseMailConfig(read, isProduction, problems);
  const oauthProviders = parseOAuthProviders(read, problems);
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

  if (problems.length > 0) throw new ConfigError(problems);

  if (authSecret === undefined) {
    authSecret = readOrCreateDevelopmentSecret(dataDir, options.onWarning);
  }

  return deepFreeze<Config>({
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
    audit: { retentionSeconds: auditRetentionSeconds },
    accounts,
    mail: mail!,
    rateLimits,
    signinThrottle,
    redisUrl,
    trustProxy,
    corsOrigins,
    oauth: { providers: oauthProviders },
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

  /** A set, non-blank value exactly as given (secrets may begin or end with a space). */
  raw(name: string): string | undefined {
    const value = this.#env[name];
    return value === undefined || value.trim() === '' ? undefined : value;
  }

  /** A set, non-blank value, trimmed; blank counts as unset. */
  string(name: string): string | undefined {
    const value = this.#env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  /** `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`). */
  boolean(name: string, fallback: boolean): boolean {
    const value = this.string(name)?.toLowerCase();
    if (value === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(value)) return true;
    if (['false', '0', 'no', 'off'].includes(value)) return false;
    this.#problems.push(`${name} must be true or false (got "${value}")`);
    return fallback;
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

  /** `points/duration`, e.g. `60/1m`, `5/15m`, `100/1h`: at most that many in each such window. */
  rateLimit(name: string, fallback: RateLimit): RateLimit {
    const value = this.string(name);
    if (value === undefined) return fallback;
    const match = /^(\d+)\s*\/\s*(\d+)\s*([smhd]?)$/.exec(value);
    const unitSeconds = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 } as const;
    const points = match ? Number(match[1]) : Number.NaN;
    const durationSeconds = match ? Number(match[2]) * unitSeconds[match[3] as keyof typeof unitSeconds] : Number.NaN;
    if (!(points >= 1 && points <= 1_000_000) || !(durationSeconds >= 1 && durationSeconds <= 7 * 86_400)) {
      this.#problems.push(`${name} must be a limit such as 60/1m or 5/15m: 1 to 1000000 per 1s to 7d (got "${value}")`);
      return fallback;
    }
    return { points, durationSeconds };
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

/**
 * Auth requests are small (bodies up to 16 KiB) and answered in milliseconds, so the defaults are
 * far tighter than Node's (60 s for headers, 5 min for a request): 10 s for the headers and 20 s
 * for the whole request still let a slow mobile link through, and cut a slow-body client in
 * 20 s instead of never. The keep-alive default stays at Fastify's 72 s, above the 60 s idle
 * timeout of common load balancers, so a balancer never reuses a connection we have just closed.
 */
function parseConnectionLimits(read: EnvReader, problems: string[]): ConnectionLimits {
  const headersTimeoutMs = read.integer('HEADERS_TIMEOUT_MS', 10_000, { min: 1_000, max: 300_000 });
  const requestTimeoutMs = read.integer('REQUEST_TIMEOUT_MS', 20_000, { min: 1_000, max: 600_000 });
  const keepAliveTimeoutMs = read.integer('KEEP_ALIVE_TIMEOUT_MS', 72_000, { min: 1_000, max: 600_000 });
  // Each connection is a file descriptor; the process also needs some for storage, Redis, SMTP and
  // its own files. 4096 is far above what one process serves at once behind a load balancer (or
  // from browsers, which keep a few connections each) and far below common descriptor limits.
  const maxConnections = read.integer('MAX_CONNECTIONS', 4_096, { min: 1, max: 1_000_000 });
  // Node measures both from the request's start: a headers deadline past the request's would never fire.
  if (headersTimeoutMs > requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS must be at most REQUEST_TIMEOUT_MS (got ${headersTimeoutMs} > ${requestTimeoutMs})`);
  }
  return { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections };
}

const MAILBOX_ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const HOSTNAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/;
const DEV_OUTBOX_FROM: MailAddress = { name: 'Gatehouse', address: 'no-reply@localhost' };

/**
 * True for a relay on this machine: `localhost`, 127.0.0.0/8 or ::1, as written (never resolved,
 * so a DNS answer cannot make a remote host look local). Only these may be reached without TLS.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (bare === 'localhost' || bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  return isIPv4(bare) && bare.startsWith('127.');
}

/** `address@domain` or `Display Name <address@domain>`; undefined when it is neither. */
export function parseMailbox(value: string): MailAddress | undefined {
  if (/[\r\n\0]/.test(value)) return undefined;
  const angled = /^(.*?)\s*<([^<>]*)>$/.exec(value);
  const address = angled ? angled[2]! : value;
  const name = angled ? angled[1]!.trim().replace(/^"(.*)"$/, '$1').trim() : '';
  if (!MAILBOX_ADDRESS.test(address) || /["<>\\]/.test(name)) return undefined;
  return { name: name === '' ? null : name, address };
}

function parseMailConfig(read: EnvReader, isProduction: boolean, problems: string[]): MailConfig | undefined {
  const host = read.string('EMAIL_SERVER_HOST');
  const port = read.integer('EMAIL_SERVER_PORT', 587, { min: 1, max: 65535 });
  const user = read.string('EMAIL_SERVER_USER');
  const password = read.raw('EMAIL_SERVER_PASSWORD');
  const fromValue = read.string('EMAIL_FROM');
  const showOutboxPage = read.boolean('DEV_OUTBOX_PAGE', false);
  const settings = {
    maxAttempts: read.integer('MAIL_MAX_ATTEMPTS', 8, { min: 1, max: 100 }),
    pollIntervalMs: read.integer('MAIL_POLL_INTERVAL_MS', 5_000, { min: 100, max: 600_000 }),
    retentionSeconds: read.duration('MAIL_RETENTION', 7 * 86_400),
  };
  let from: MailAddress | undefined = DEV_OUTBOX_FROM;
  if (fromValue !== undefined) {
    from = parseMailbox(fromValue);
    if (from === undefined) problems.push(`EMAIL_FROM must be an address such as no-reply@example.com or "Gatehouse <no-reply@example.com>" (got "${fromValue}")`);
  }

  if (host === undefined) {
    if (isProduction) {
      problems.push('EMAIL_SERVER_HOST is required when NODE_ENV=production: mail is required in production for password reset and sign-up');
    }
    const orphans = ['EMAIL_SERVER_PORT', 'EMAIL_SERVER_USER', 'EMAIL_SERVER_PASSWORD'].filter((name) => read.raw(name) !== undefined);
    if (orphans.length > 0) problems.push(`${orphans.join(', ')} ${orphans.length === 1 ? 'is' : 'are'} set but EMAIL_SERVER_HOST is not`);
    if (showOutboxPage && isProduction) problems.push('DEV_OUTBOX_PAGE must not be on when NODE_ENV=production: the page shows live reset links');
    return from && { kind: 'dev-outbox', smtp: null, showOutboxPage, from, ...settings };
  }

  if (showOutboxPage) problems.push('DEV_OUTBOX_PAGE is on but EMAIL_SERVER_HOST is set: mail goes to the SMTP server, there is no dev outbox to show');

  const bareHost = host.replace(/^\[(.*)\]$/, '$1');
  if (!HOSTNAME.test(bareHost) && !isIPv6(bareHost)) {
    problems.push(`EMAIL_SERVER_HOST must be a host name or an IP address, without a scheme or port (got "${host}")`);
  }
  if (fromValue === undefined) {
    problems.push('EMAIL_FROM is required when EMAIL_SERVER_HOST is set (e.g. "Gatehouse <no-reply@example.com>")');
  }
  if ((user === undefined) !== (password === undefined)) {
    problems.push('EMAIL_SERVER_USER and EMAIL_SERVER_PASSWORD must be set together');
  }
  return from && {
    kind: 'smtp',
    smtp: {
      host: bareHost,
      port,
      isImplicitTls: port === 465,
      requireTls: !isLoopbackHost(bareHost),
      auth: user !== undefined && password !== undefined ? { user, password } : null,
    },
    showOutboxPage: false,
    from,
    ...settings,
  };
}

/**
 * GitHub (provider A), Google (provider B) and one generic OpenID Connect provider. Each is on
 * when its client id and secret are both set; the seed's PROVIDER_A_* / PROVIDER_B_* names are
 * accepted for the first two. Provider endpoints must be https, except on a loopback host (a
 * provider run beside Gatehouse, or a test double): tokens and secrets never cross a network in clear.
 */
function parseOAuthProviders(read: EnvReader, problems: string[]): OAuthProviderConfig[] {
  const providers: OAuthProviderConfig[] = [];
  const credentials = (prefix: string, alias?: string) => {
    const pick = (suffix: string, raw: boolean) => {
      const primary = raw ? read.raw(`${prefix}_${suffix}`) : read.string(`${prefix}_${suffix}`);
      if (primary !== undefined || alias === undefined) return primary;
      return raw ? read.raw(`${alias}_${suffix}`) : read.string(`${alias}_${suffix}`);
    };
    const clientId = pick('CLIENT_ID', false);
    const clientSecret = pick('CLIENT_SECRET', true);
    const names = alias === undefined ? `${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET` : `${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET (or ${alias}_*)`;
    if ((clientId === undefined) !== (clientSecret === undefined)) problems.push(`${names} must be set together`);
    return clientId !== undefined && clientSecret !== undefined ? { clientId, clientSecret } : null;
  };
  const endpoint = (name: string, fallback: string) => parseProviderUrl(name, read.string(name) ?? fallback, problems);

  const github = credentials('GITHUB', 'PROVIDER_A');
  const githubUrl = endpoint('GITHUB_URL', 'https://github.com');
  const githubApiUrl = endpoint('GITHUB_API_URL', 'https://api.github.com');
  if (github !== null && githubUrl !== undefined && githubApiUrl !== undefined) {
    providers.push({ id: 'github', kind: 'github', name: 'GitHub', ...github, url: githubUrl, apiUrl: githubApiUrl });
  }

  const google = credentials('GOOGLE', 'PROVIDER_B');
  const googleIssuer = endpoint('GOOGLE_ISSUER', 'https://accounts.google.com');
  if (google !== null && googleIssuer !== undefined) {
    providers.push({ id: 'google', kind: 'oidc', name: 'Google', ...google, issuer: googleIssuer });
  }

  const oidc = credentials('OIDC');
  const oidcIssuerValue = read.string('OIDC_ISSUER');
  const oidcName = read.string('OIDC_NAME') ?? 'OpenID Connect';
  if (oidcName.length > 64 || /[\u0000-\u001f\u007f]/.test(oidcName)) problems.push('OIDC_NAME must be at most 64 characters, without control characters');
  if (oidc !== null && oidcIssuerValue === undefined) problems.push('OIDC_ISSUER is required when OIDC_CLIENT_ID is set');
  if (oidc === null && oidcIssuerValue !== undefined) problems.push('OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are required when OIDC_ISSUER is set');
  const oidcIssuer = oidcIssuerValue === undefined ? undefined : parseProviderUrl('OIDC_ISSUER', oidcIssuerValue, problems);
  if (oidc !== null && oidcIssuer !== undefined) {
    providers.push({ id: 'oidc', kind: 'oidc', name: oidcName, ...oidc, issuer: oidcIssuer });
  }
  return providers;
}

/**
 * A provider endpoint. Problems never quote the value: a mistyped URL may carry credentials
 * (`https://user:secret@…`), and the message is printed at start-up.
 */
function parseProviderUrl(name: string, value: string, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${name} must be an absolute https URL`);
    return undefined;
  }
  const isAllowedHttp = url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !isAllowedHttp) {
    problems.push(`${name} must be https (http only for a loopback host) (got ${url.protocol}//${url.host})`);
    return undefined;
  }
  if (hasExtraUrlParts(url)) {
    problems.push(`${name} must not contain credentials, a query or a fragment`);
    return undefined;
  }
  return toBaseUrl(url);
}

/** Credentials, a query or a fragment: none belongs in a base URL. */
function hasExtraUrlParts(url: URL): boolean {
  return url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '';
}

/** The origin and path, without a trailing slash. */
function toBaseUrl(url: URL): string {
  return url.origin + url.pathname.replace(/\/+$/, '');
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

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function parseTrustProxy(value: string | undefined, problems: string[]): TrustProxy {
  if (value === undefined || value.toLowerCase() === 'false') return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops >= 1 && hops <= 10) return hops;
  } else {
    const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
    const isValid = (entry: string) => {
      if (PROXY_NAMES.includes(entry)) return true;
      const [address, prefix, extra] = entry.split('/');
      const version = isIP(address ?? '');
      if (version === 0 || extra !== undefined) return false;
      if (prefix === undefined) return true;
      return /^\d+$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
    };
    if (entries.length > 0 && entries.every(isValid)) return entries;
  }
  problems.push(`TRUST_PROXY must be false, a hop count from 1 to 10, or a comma-separated list of addresses, CIDR ranges or loopback/linklocal/uniquelocal (got "${value}")`);
  return false;
}

function parseCorsOrigins(value: string | undefined, problems: string[]): string[] {
  if (value === undefined) return [];
  const origins: string[] = [];
  for (const entry of value.split(',').map((item) => item.trim()).filter((item) => item !== '')) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    // An exact origin: never `*`, never a pattern, so no origin is reflected that was not named.
    if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== entry.replace(/\/$/, '')) {
      problems.push(`CORS_ORIGINS must list exact origins such as https://app.example.com (got "${entry}")`);
      continue;
    }
    origins.push(url.origin);
  }
  return origins;
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
