/**
 * Wires features together in one place: stores get storage, services get their stores, clock and
 * each other. `buildApp` receives the result; the CLI uses the same wiring without HTTP.
 */
import type { Config } from './config.ts';
import type { Storage } from './storage/database.ts';
import { systemClock, type Clock } from './lib/clock.ts';
import { createUserService } from './users/user.service.ts';
import { createPasswordHasher } from './credentials/password-hasher.ts';
import { createStoredHashParametersJob } from './credentials/stored-hash-parameters.ts';
import { deriveKey } from './lib/derive-key.ts';
import { createCredentialsService } from './credentials/credentials.service.ts';
import { createSignInPipeline } from './signin/signin-pipeline.ts';
import { loadSigningKeys } from './sessions/signing-keys.ts';
import { createSessionService } from './sessions/session.service.ts';
import { createRevocationList } from './sessions/revocation-list.ts';
import { createAuditService } from './audit/audit.service.ts';
import { createAuditRetentionJob } from './audit/audit-retention.ts';
import { createAdminService } from './admin/admin.service.ts';
import { createMailService } from './mail/mail.service.ts';
import { createActionTokens } from './tokens/action-tokens.ts';
import { createVerificationService } from './verification/verification.service.ts';
import { createSignupService } from './credentials/signup.service.ts';
import { createPasswordResetService } from './password-reset/password-reset.service.ts';
import { createOAuthService } from './oauth/oauth.service.ts';
import { createRateLimiters } from './http/rate-limit.ts';
import { createRequestLimits } from './http/request-limits.ts';
import { createSignInThrottle } from './credentials/signin-throttle.ts';
import { createPasswordRefusalLimits } from './credentials/password-refusals.ts';
import { createHousekeepingJob } from './ops/housekeeping.ts';
import { createLogger } from './http/logging.ts';
import type { Logger } from './lib/logger.ts';

export type Services = Awaited<ReturnType<typeof createServices>>;

export async function createServices(deps: { config: Config; storage: Storage; clock?: Clock; logger?: Logger }) {
  const { config, storage } = deps;
  const clock = deps.clock ?? systemClock;
  /** For work outside a request: background jobs, audit writes that failed. */
  const logger = deps.logger ?? createLogger(config);
  const { db } = storage;

  const audit = createAuditService({ db, clock, logger });
  const auditRetention = createAuditRetentionJob({ audit, clock, logger, retentionMs: config.audit.retentionSeconds * 1000 });
  const users = createUserService({ db, clock });
  const hasher = await createPasswordHasher({ ...config.passwords, dummySelectionKey: deriveKey(config.authSecret, 'dummy-hash-selection') });
  // The unknown-address dummy follows the parameters stored hashes were made with.
  const storedHashParameters = createStoredHashParametersJob({ users, hasher, logger });
  const keys = await loadSigningKeys({
    db,
    authSecret: config.authSecret,
    clock,
    retentionMs: config.tokens.accessTokenTtlSeconds * 1000,
  });
  const revocations = createRevocationList({
    db,
    clock,
    syncIntervalMs: config.sessions.revocationSyncIntervalMs,
    // Fail closed when this instance has not heard from storage for a while.
    staleAfterMs: Math.max(30_000, 10 * config.sessions.revocationSyncIntervalMs),
  });
  // Only the jwt strategy reads the mirror; the database strategy reads session rows instead.
  if (config.sessionStrategy === 'jwt') await revocations.start();
  const sessions = createSessionService({
    db,
    isPostgres: storage.dialect === 'postgres',
    keys,
    users,
    revocations,
    audit,
    clock,
    strategy: config.sessionStrategy,
    authSecret: config.authSecret,
    tokens: config.tokens,
    sessions: config.sessions,
  });
  // Before credentials: a password change queues its notice mail in its own transaction.
  const mail = createMailService({ db, isPostgres: storage.dialect === 'postgres', config, clock, logger });
  const actionTokens = createActionTokens({ clock });
  // Shared counters: storage by default, Redis with REDIS_URL; memory while either fails.
  const rateLimiters = await createRateLimiters({ db, clock, logger, redisUrl: config.redisUrl });
  const limits = createRequestLimits(rateLimiters, config.rateLimits);
  const signInThrottle = createSignInThrottle({ limiters: rateLimiters, rateLimits: config.rateLimits, throttle: config.signinThrottle, clock });
  // Where every sign-in ends, whatever its first factor. No module registers a step yet.
  const signInPipeline = createSignInPipeline({
    users,
    sessions,
    audit,
    clock,
    requireEmailVerification: config.accounts.requireEmailVerification,
    steps: [],
  });
  const credentials = createCredentialsService({
    users,
    sessions,
    hasher,
    policy: { minLength: config.passwords.minLength, maxLength: config.passwords.maxLength, minScore: config.passwords.minScore },
    audit,
    pipeline: signInPipeline,
    db,
    mail,
    actionTokens,
    clock,
    throttle: signInThrottle,
    passwordRefusals: createPasswordRefusalLimits({ limiters: rateLimiters, rateLimits: config.rateLimits, clock }),
  });
  const admin = createAdminService({ users, sessions, credentials, audit });
  // Sign-up and e-mail verification.
  const verification = createVerificationService({ db, users, tokens: actionTokens, mail, audit, ttlSeconds: config.accounts.verificationTokenTtlSeconds });
  const signup = createSignupService({ db, allowSignup: config.accounts.allowSignup, credentials, users, verification, mail, audit });
  // Password reset by e-mail link.
  const passwordReset = createPasswordResetService({ db, users, credentials, tokens: actionTokens, mail, audit, ttlSeconds: config.accounts.resetTokenTtlSeconds });
  // Sign-in with GitHub, Google and a generic OpenID Connect provider.
  const oauth = createOAuthService({
    db,
    providers: config.oauth.providers,
    authUrl: config.authUrl,
    authSecret: config.authSecret,
    users,
    sessions,
    audit,
    clock,
    logger,
    allowSignup: config.accounts.allowSignup,
    pipeline: signInPipeline,
  });
  const housekeeping = createHousekeepingJob({ db, clock, logger, actionTokens, idleTimeoutMs: config.sessions.idleTimeoutSeconds * 1000 });
  auditRetention.start();
  housekeeping.start();
  storedHashParameters.start();
  mail.start();

  return {
    config,
    storage,
    clock,
    users,
    hasher,
    keys,
    revocations,
    sessions,
    signInPipeline,
    credentials,
    audit,
    auditRetention,
    mail,
    admin,
    actionTokens,
    verification,
    signup,
    passwordReset,
    oauth,
    housekeeping,
    storedHashParameters,
    rateLimiters,
    limits,
    logger,
    /** Stops background work and waits for a purge in progress; storage is closed by its owner. */
    async stop() {
      revocations.stop();
      keys.stop();
      await Promise.all([auditRetention.stop(), housekeeping.stop(), storedHashParameters.stop(), mail.stop()]);
      await rateLimiters.close();
    },
  };
}
