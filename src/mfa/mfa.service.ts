/**
 * Second factors of an account: an authenticator app (TOTP, RFC 6238) and recovery codes, and the
 * one check every use of them goes through (`checkCode`). Enrolment is two steps: `beginTotpSetup`
 * shows a new secret (kept sealed and pending for 15 minutes), `enableTotp` turns it on once a
 * code from it proves the app has it, and hands out the recovery codes (shown once, stored as
 * keyed hashes). Adding or removing a factor is audited and mailed to the account's address.
 *
 * Every code check counts against the account's sign-in throttle (the same as password attempts),
 * so the 10^6 TOTP codes cannot be walked, whether through sign-in or a signed-in session.
 *
 * Other modules bring other kinds of second factor (passkeys), registered in their module
 * (`secondFactors`, signin/second-factor-kind.ts): which factors an account has, what a sign-in
 * may be finished with, the status and an administrator's reset walk every kind, TOTP first.
 */
import type { UserCondition } from '../users/user.store.ts';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { User, UserService } from '../users/user.service.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { SignInThrottle } from '../credentials/signin-throttle.ts';
import { accountKey, type Limiter } from '../http/rate-limit.ts';
import { deriveKey, deriveSecretKey } from '../lib/derive-key.ts';
import type { MfaConfig } from './mfa.config.ts';
import { acceptCode, createTotpSecret, totpUrl } from './totp.ts';
import { generateRecoveryCodes, hashRecoveryCode, normalise } from './recovery-codes.ts';
import { openSecret, sealSecret, SecretBoxError } from './secret-box.ts';
import { otpauthQrSvg } from './qr.ts';
import { createTotpFactorKind } from './totp-factor.ts';
import * as store from './mfa.store.ts';
import { isSingle, type SecondFactorKind } from '../signin/second-factor-kind.ts';

/** How long a setup's secret waits for the code that enables it. */
const PENDING_SETUP_MS = 15 * 60_000;

/** The recovery codes, offered in `methods` after the account's factors when some are left. */
export const RECOVERY_CODE_METHOD = 'recovery_code';

/** An account's factors of one kind, as the kind lists them. */
export interface FactorsOfKind {
  kind: SecondFactorKind;
  items: readonly unknown[];
}

export interface MfaStatus {
  /** Every kind, in the order offered, with the account's factors of it (none, for most). */
  factors: FactorsOfKind[];
  recoveryCodesLeft: number;
}

/** Whether any factor of any kind is among `factors`. */
export const hasFactor = (factors: readonly FactorsOfKind[]): boolean => factors.some((entry) => entry.items.length > 0);

/** The status as `GET /api/auth/mfa` answers it: a field per kind (set up or not, or the list), and the codes left. */
export function statusJson({ factors, recoveryCodesLeft }: MfaStatus): Record<string, unknown> & { recoveryCodesLeft: number } {
  return { ...Object.fromEntries(factors.map(({ kind, items }) => [kind.statusKey, isSingle(kind) ? items.length > 0 : items])), recoveryCodesLeft };
}

export type CodeCheck =
  | { ok: true; method: 'totp' | 'recovery_code' }
  | { ok: false; reason: 'INVALID_CODE' }
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export type MfaService = ReturnType<typeof createMfaService>;

export function createMfaService(deps: {
  db: Db;
  clock: Clock;
  users: UserService;
  audit: AuditService;
  mail: MailService;
  throttle: SignInThrottle;
  /** Codes tried per account since its last right one (config.codesPerAccount). */
  codeAttempts: Limiter;
  config: MfaConfig;
  authSecret: string;
  /** Every registered kind of second factor (the modules are built after this one): read when needed. Without it, TOTP alone. */
  factorKinds?: () => readonly SecondFactorKind[];
}) {
  const { db, clock, audit, mail, throttle, config } = deps;
  const totpFactor = createTotpFactorKind(db);
  /** TOTP first (the order `methods` and the pages offer them), then the other modules' in list order. */
  const kinds = () => [totpFactor, ...(deps.factorKinds?.() ?? []).filter((kind) => kind.method !== totpFactor.method)];

  /**
   * The account's factors, kind by kind. Through `on` when given: inside a transaction, its own
   * (SQLite has one connection for both).
   */
  async function listFactors(userId: string, on: Db = db): Promise<FactorsOfKind[]> {
    return Promise.all(kinds().map(async (kind) => ({ kind, items: await kind.list(userId, on) })));
  }
  const secretKey = deriveSecretKey(deps.authSecret, 'gatehouse mfa totp-secret v1');
  const recoveryKey = deriveKey(deps.authSecret, 'gatehouse mfa recovery-codes v1');

  /** The enabled TOTP factor of `userId`, opened; null when there is none. */
  async function enabledTotp(userId: string, on: Db = db) {
    const row = await store.findTotp(on, userId);
    if (row?.secret_box == null) return null;
    const secret = openable(row.secret_box, userId);
    // Sealed under another AUTH_SECRET: no code can match it (never a 500); an administrator's
    // reset clears it, and the user sets the app up again.
    return secret === null ? null : { box: row.secret_box, secret, lastUsedStep: row.last_used_step };
  }

  /** The sealed secret in clear, or null when this AUTH_SECRET cannot open it. */
  function openable(box: string, userId: string): string | null {
    try {
      return openSecret(box, secretKey, userId);
    } catch (error) {
      if (error instanceof SecretBoxError) return null;
      throw error;
    }
  }

  /** A new set of recovery codes for `userId`, written through `trx`; returns them in clear, once. */
  async function issueRecoveryCodes(trx: Db, userId: string): Promise<string[]> {
    const codes = generateRecoveryCodes();
    await store.replaceRecoveryCodes(trx, userId, codes.map((code) => hashRecoveryCode(code, recoveryKey)), clock());
    return codes;
  }

  /**
   * Is `code` (a TOTP code, or a recovery code) a valid second factor of `user` now? A right code
   * is spent: a TOTP code's time step, or the recovery code itself. Counted against the account's
   * throttle either way.
   */
  async function checkCode(user: User, code: unknown, ip: string | null): Promise<CodeCheck> {
    const gate = await throttle.checkAttempt(user.email, ip);
    if (!gate.ok) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: gate.retryAfterSeconds };
    try {
      // Counted before the check (atomically, so codes sent together count too); only a right code clears it.
      const account = accountKey(user.email);
      const wait = await deps.codeAttempts.consume(account);
      if (wait !== null) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: wait };
      const method = await spendCode(user.id, code);
      if (method === null) {
        await gate.attempt.failed();
        return { ok: false, reason: 'INVALID_CODE' };
      }
      await gate.attempt.succeeded();
      await deps.codeAttempts.reset(account);
      return { ok: true, method };
    } finally {
      await gate.attempt.release().catch(() => {});
    }
  }

  /** Spends `code` if it is a valid one: which kind it was, or null. */
  async function spendCode(userId: string, code: unknown): Promise<'totp' | 'recovery_code' | null> {
    const recoveryCode = normalise(code);
    if (recoveryCode !== null) {
      return (await store.spendRecoveryCode(db, userId, hashRecoveryCode(recoveryCode, recoveryKey), clock())) ? 'recovery_code' : null;
    }
    const totp = await enabledTotp(userId);
    if (totp === null) return null;
    const accepted = acceptCode({ secret: totp.secret, code, now: clock(), lastUsedStep: totp.lastUsedStep });
    // The step is recorded only if no other request used it (or a later one) first: a code works once.
    if (accepted === null || !(await store.acceptTotpStep(db, userId, totp.box, accepted.step, clock()))) return null;
    return 'totp';
  }

  return {
    checkCode,

    /** The mfa module's own kind, which it registers with the others. */
    totpFactor,

    /** Every kind of second factor, in the order offered. */
    factorKinds: kinds,

    /**
     * The condition "has (`isPresent`) / has no second factor" on a users query, from the kinds
     * that state theirs (`isHeldBy`); the kinds that do not are named in `uncounted`.
     */
    secondFactorCondition(isPresent: boolean): { condition: UserCondition; uncounted: string[] } {
      const all = kinds();
      const stated = all.flatMap((kind) => (kind.isHeldBy === undefined ? [] : [kind.isHeldBy]));
      // "None" as NOT … AND NOT …, not NOT (… OR …): PostgreSQL turns each top-level NOT EXISTS into
      // an anti-join probing the factor table's user index, where the negated OR stays a subplan
      // that may hash (read whole) every factor table.
      const condition: UserCondition = (eb) => {
        if (stated.length === 0) return eb.lit(!isPresent);
        return isPresent ? eb.or(stated.map((held) => held(eb))) : eb.and(stated.map((held) => eb.not(held(eb))));
      };
      return { condition, uncounted: all.filter((kind) => kind.isHeldBy === undefined).map((kind) => kind.method) };
    },

    async status(userId: string): Promise<MfaStatus> {
      const [factors, recoveryCodesLeft] = await Promise.all([listFactors(userId), store.countRecoveryCodesLeft(db, userId)]);
      return { factors, recoveryCodesLeft };
    },

    /** The methods a sign-in of `userId` may be finished with; empty when the account has no second factor. */
    async methodsOf(userId: string): Promise<string[]> {
      // Run by every sign-in: the recovery codes are counted only for an account with a factor.
      const methods = (await listFactors(userId)).filter((entry) => entry.items.length > 0).map((entry) => entry.kind.method);
      if (methods.length > 0 && (await store.countRecoveryCodesLeft(db, userId)) > 0) methods.push(RECOVERY_CODE_METHOD);
      return methods;
    },

    /**
     * For a module adding a factor (a passkey), in its transaction, after writing it: a set of
     * recovery codes to show once when the account has none left, or when this is its only factor
     * (codes left from factors removed earlier must not come back to life unseen); null otherwise.
     */
    async issueRecoveryCodesIfNone(trx: Db, userId: string): Promise<string[] | null> {
      const [left, factors] = await Promise.all([store.countRecoveryCodesLeft(trx, userId), listFactors(userId, trx)]);
      const isOnlyFactor = factors.reduce((count, entry) => count + entry.items.length, 0) <= 1;
      return left > 0 && !isOnlyFactor ? null : issueRecoveryCodes(trx, userId);
    },

    /** The setup waiting for its first code, to show again (after a wrong code); null when there is none. */
    async pendingSetup(user: User): Promise<{ secret: string; otpauthUrl: string; qrSvg: string } | null> {
      const row = await store.findTotp(db, user.id);
      if (row?.pending_box == null || row.pending_expires_at === null || row.pending_expires_at <= clock()) return null;
      const secret = openable(row.pending_box, user.id);
      if (secret === null) return null;
      const otpauthUrl = totpUrl({ secret, issuer: config.issuer, email: user.email.replaceAll(':', '') });
      return { secret, otpauthUrl, qrSvg: otpauthQrSvg(otpauthUrl) };
    },

    /**
     * An administrator removes every second factor of `user` (who lost them all): every kind's (the
     * app, the passkeys), the recovery codes and pending sign-ins; audited (by kind: whether it was
     * set up, or how many were removed) and mailed to the user.
     */
    async resetFactors(user: User, source: AuditSource): Promise<{ removed: Record<string, boolean | number> }> {
      const removed = await db.transaction().execute(async (trx) => {
        const removedByKind: Record<string, boolean | number> = {};
        for (const kind of kinds()) {
          const count = await kind.removeAll(trx, user.id);
          removedByKind[kind.statusKey] = isSingle(kind) ? count > 0 : count;
        }
        await store.deleteRecoveryCodes(trx, user.id);
        await store.deleteUserChallenges(trx, user.id);
        await audit.record({ type: 'mfa.reset', userId: user.id, source, details: removedByKind }, { db: trx });
        await mail.securityNotice(trx, { user, change: 'secondFactorsReset', source });
        return removedByKind;
      });
      mail.wake();
      return { removed };
    },

    /** A new pending secret for the user's authenticator app; nothing is enabled until `enableTotp`. */
    async beginTotpSetup(user: User): Promise<{ ok: true; secret: string; otpauthUrl: string; qrSvg: string } | { ok: false; reason: 'TOTP_ALREADY_ENABLED' }> {
      if ((await store.findTotp(db, user.id))?.secret_box != null) return { ok: false, reason: 'TOTP_ALREADY_ENABLED' };
      const secret = createTotpSecret();
      const now = clock();
      await store.savePendingTotp(db, user.id, sealSecret(secret, secretKey, user.id), now + PENDING_SETUP_MS, now);
      // The label shows the address; apps split it at a colon, which an address may (rarely) hold.
      const otpauthUrl = totpUrl({ secret, issuer: config.issuer, email: user.email.replaceAll(':', '') });
      return { ok: true, secret, otpauthUrl, qrSvg: otpauthQrSvg(otpauthUrl) };
    },

    /** Enables the pending secret when `code` comes from it; the new recovery codes, shown once. */
    async enableTotp(
      user: User,
      code: unknown,
      source: AuditSource,
    ): Promise<{ ok: true; recoveryCodes: string[] } | { ok: false; reason: 'TOTP_ALREADY_ENABLED' | 'MFA_SETUP_REQUIRED' | 'INVALID_CODE' } | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number }> {
      const row = await store.findTotp(db, user.id);
      if (row?.secret_box != null) return { ok: false, reason: 'TOTP_ALREADY_ENABLED' };
      if (row?.pending_box == null || row.pending_expires_at === null || row.pending_expires_at <= clock()) return { ok: false, reason: 'MFA_SETUP_REQUIRED' };
      const pendingBox = row.pending_box;
      const secret = openable(pendingBox, user.id);
      if (secret === null) return { ok: false, reason: 'MFA_SETUP_REQUIRED' };

      const gate = await throttle.checkAttempt(user.email, source.ip);
      if (!gate.ok) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: gate.retryAfterSeconds };
      try {
        const accepted = acceptCode({ secret, code, now: clock(), lastUsedStep: null });
        if (accepted === null) {
          await gate.attempt.failed();
          return { ok: false, reason: 'INVALID_CODE' };
        }
        await gate.attempt.succeeded();
        const recoveryCodes = await db.transaction().execute(async (trx) => {
          if (!(await store.enablePendingTotp(trx, user.id, pendingBox, accepted.step, clock()))) return null;
          const codes = await issueRecoveryCodes(trx, user.id);
          await audit.record({ type: 'mfa.totp_enabled', userId: user.id, source }, { db: trx });
          await mail.securityNotice(trx, { user, change: 'totpAdded', source });
          return codes;
        });
        mail.wake();
        // Another request enabled or replaced the pending secret meanwhile.
        return recoveryCodes === null ? { ok: false, reason: 'MFA_SETUP_REQUIRED' } : { ok: true, recoveryCodes };
      } finally {
        await gate.attempt.release().catch(() => {});
      }
    },

    /** Removes the authenticator app (and, with no factor left, the recovery codes), after a valid code. */
    async disableTotp(user: User, code: unknown, source: AuditSource): Promise<{ ok: true } | { ok: false; reason: 'MFA_NOT_ENABLED' } | Exclude<CodeCheck, { ok: true }>> {
      if ((await enabledTotp(user.id)) === null) return { ok: false, reason: 'MFA_NOT_ENABLED' };
      const check = await checkCode(user, code, source.ip);
      if (!check.ok) return check;
      await db.transaction().execute(async (trx) => {
        await store.deleteTotp(trx, user.id);
        // Recovery codes back up the other factors: with none left, they go too.
        if (!hasFactor(await listFactors(user.id, trx))) await store.deleteRecoveryCodes(trx, user.id);
        await store.deleteUserChallenges(trx, user.id);
        await audit.record({ type: 'mfa.totp_disabled', userId: user.id, source, details: { with: check.method } }, { db: trx });
        await mail.securityNotice(trx, { user, change: 'totpRemoved', source });
      });
      mail.wake();
      return { ok: true };
    },

    /** A new set of recovery codes (the old set dies), after a valid code. */
    async regenerateRecoveryCodes(user: User, code: unknown, source: AuditSource): Promise<{ ok: true; recoveryCodes: string[] } | { ok: false; reason: 'MFA_NOT_ENABLED' } | Exclude<CodeCheck, { ok: true }>> {
      if ((await this.methodsOf(user.id)).length === 0) return { ok: false, reason: 'MFA_NOT_ENABLED' };
      const check = await checkCode(user, code, source.ip);
      if (!check.ok) return check;
      const recoveryCodes = await db.transaction().execute(async (trx) => {
        const codes = await issueRecoveryCodes(trx, user.id);
        await audit.record({ type: 'mfa.recovery_codes_renewed', userId: user.id, source }, { db: trx });
        await mail.securityNotice(trx, { user, change: 'recoveryCodesRenewed', source });
        return codes;
      });
      mail.wake();
      return { ok: true, recoveryCodes };
    },
  };
}
