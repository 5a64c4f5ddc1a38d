/**
 * A first factor of a sign-in, as the module that verified it describes it: the pipeline and the
 * second-factor step read what it says of itself and never switch on its kind. A module that brings
 * a way to sign in builds its factors (credentials/password-factor.ts, oauth/provider-factor.ts,
 * passkeys/passkey-factor.ts) and registers its `FirstFactorKind` in its module (`firstFactors`),
 * so that a sign-in waiting for a second factor can be finished later with the same first factor.
 */
import type { User } from '../users/user.service.ts';
import type { Db } from '../storage/database.ts';

/** How the account was identified, and what that proved. */
export interface FirstFactor {
  /** Its registered kind (`password`, `oauth`, `passkey`): the audit log's and the metrics' `method`. */
  readonly kind: string;
  /** The RFC 8176 methods it proves (`pwd`; `fed`; a user-verified passkey `hwk`/`swk`, `user`, `mfa`). */
  readonly amr: readonly string[];
  /** What the audit log records of it: the address tried, and details such as the provider; never a secret. */
  readonly audit: { readonly email?: string; readonly details?: Readonly<Record<string, string>> };
  /** It vouched for the account's own address (a provider that verified it): as good as a verification link. */
  readonly provesEmail: boolean;
  /** The password hash it was verified against: the session is written only while it is still the account's. */
  readonly passwordHash?: string;
  /**
   * What a challenge (a second factor) stores and its kind checks again when the challenge is met,
   * so the sign-in finishes only while the first factor still holds: a SHA-256 of the verified
   * password hash, the provider, the passkey. Null when there is nothing to check again.
   */
  readonly binding: string | null;
  /**
   * What the factor writes with the session, in the session's transaction (after the session row,
   * before `signin.success`): it commits with the sign-in or not at all. The password factor
   * replaces the hash it verified (a foreign one, or outdated argon2 parameters) with the argon2id
   * hash it made of the same password, only while the verified one is still the account's.
   */
  readonly onSessionStarted?: (db: Db) => Promise<void>;
}

/** What a kind's `resume` is given: the account of the challenge, and the binding its factor stored. */
export interface StoredFirstFactor {
  readonly user: User;
  readonly binding: string | null;
}

/** A kind of first factor, registered by the module that brings it. */
export interface FirstFactorKind {
  /** Lower-case letters, digits, `-` and `_`, at most 16 characters (`FACTOR_NAME`); unique. */
  readonly kind: string;
  /**
   * The factor as it holds now, rebuilt when a challenge of the sign-in it began is met; null when
   * its binding no longer holds (the password was changed or reset, the passkey removed).
   */
  resume(stored: StoredFirstFactor): Promise<FirstFactor | null>;
}

/**
 * The name of a kind of factor (a first factor's `kind`, a second factor's `method`): it is stored
 * with challenges (16 characters at most) and becomes a metric label, so it is a plain word.
 */
export const FACTOR_NAME = /^[a-z][a-z0-9_-]{0,15}$/;
