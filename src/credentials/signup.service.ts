/**
 * Self-service sign-up. The answer never says whether the address already has an account: a new
 * address gets an account and a verification mail; a taken one gets a mail to its owner ("someone
 * tried to sign up with your address", with links to sign in and to reset the password) and
 * nothing else changes. Both paths do the same expensive work in the same order, so they take
 * about the same time: the password policy check, an argon2id hash (for a taken address the hash is
 * made and thrown away) and the address lookup, then one transaction that enqueues one mail and
 * writes one audit event (a new address also writes its user and token there: a few row writes,
 * small beside the hash).
 */
import type { Db } from '../storage/database.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { UserService } from '../users/user.service.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import type { VerificationService } from '../verification/verification.service.ts';
import type { CredentialsService } from './credentials.service.ts';
import type { PasswordRejection } from './password-policy.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

export interface SignUpInput {
  email: string;
  name: string;
  password: string;
}

/** `ok` covers both a new and a taken address: callers must not be able to tell them apart. */
export type SignUpResult =
  | { ok: true }
  | { ok: false; reason: 'SIGNUP_DISABLED' }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection }
  /** Too many refused passwords from this client; the same for a new and a taken address. */
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export type SignupService = ReturnType<typeof createSignupService>;

export function createSignupService(deps: {
  db: Db;
  /** ALLOW_SIGNUP. */
  allowSignup: boolean;
  credentials: CredentialsService;
  users: UserService;
  verification: VerificationService;
  mail: MailService;
  audit: AuditService;
}) {
  const { db, allowSignup, credentials, users, verification, mail, audit } = deps;

  /** The owner of a taken address hears that someone tried; their account is not touched. */
  async function notifyOwner(email: string, source: AuditSource): Promise<void> {
    const owner = await users.findUserByEmail(email);
    if (owner === null) return; // deleted meanwhile: nobody to tell
    await db.transaction().execute(async (trx) => {
      await mail.enqueue(trx, {
        to: owner.email,
        template: 'signup-existing-account',
        // The owner's own language; only an account that has none gets the one of whoever tried.
        locale: mailLocale(owner, source),
        // Never the name in the request, nor the account's own unless confirmed: the account may
        // itself have been made by a stranger signing up with this address (see greetingName).
        data: { name: greetingName(owner), signInUrl: mail.link(HUB_PAGES.signIn), forgotPasswordUrl: mail.accountRecoveryUrl() },
      });
      await audit.record({ type: 'signup.existing_account', userId: owner.id, source }, { db: trx });
    });
  }

  return {
    /** ALLOW_SIGNUP: when false, `signUp` refuses everything. */
    isEnabled: allowSignup,

    /**
     * Signs up `input`, or tells the address's owner. The new user is unverified and has no roles;
     * the user, the verification token, its mail and the `user.created` event commit together.
     */
    async signUp(input: SignUpInput, source: AuditSource): Promise<SignUpResult> {
      if (!allowSignup) return { ok: false, reason: 'SIGNUP_DISABLED' };
      // The same call for a new and a taken address: policy, hash, lookup. A taken one stops
      // at the lookup with EMAIL_TAKEN, its hash discarded, having cost what a new one costs.
      const created = await credentials.createPasswordUser(
        // The browser's language becomes the account's: its verification mail, and every later one, use it.
        { email: input.email, name: input.name, password: input.password, locale: source.locale ?? null },
        {
          onCreated: async (trx, user) => {
            await verification.sendVerificationMail(trx, user);
            await audit.record({ type: 'user.created', userId: user.id, source, details: { via: 'signup' } }, { db: trx });
          },
          // Refusals count against the client's address, not the address typed: that may be someone else's.
          client: { ip: source.ip },
        },
      );
      if (!created.ok && (created.reason === 'WEAK_PASSWORD' || created.reason === 'RATE_LIMITED')) return created;
      if (!created.ok && created.reason === 'INVALID_ROLE') throw new Error('sign-up asked for no roles, yet a role was refused');
      if (!created.ok) await notifyOwner(input.email, source);
      mail.wake();
      return { ok: true };
    },
  };
}
