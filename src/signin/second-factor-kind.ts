/**
 * A kind of second factor (an authenticator app, passkeys), registered with the MFA module by the
 * module that brings it (`secondFactors`): the MFA module lists them, tells whether an account has
 * one, offers them at sign-in (`methods`), shows them (`GET /api/auth/mfa`, the dashboard, the
 * administrators' page of a user) and removes them all on an administrator's reset, without
 * naming any of them. Checking a factor stays with its module, which finishes the sign-in through
 * the MFA module's challenge.
 */
import type { z } from 'zod';
import type { Db } from '../storage/database.ts';
import type { UserCondition } from '../users/user.store.ts';

export interface SecondFactorKind {
  /** What MFA_REQUIRED's `methods` offers (`totp`, `passkey`): a `FACTOR_NAME`, unique. */
  readonly method: string;
  /** Its field in `GET /api/auth/mfa` (`totp`, `passkeys`), and in the `mfa.reset` audit event's details. */
  readonly statusKey: string;
  /**
   * What that field holds: for a factor an account has at most one of (`single`, its description),
   * whether it is set up; else the account's factors, each as `item` describes it. The audit event
   * of a reset records the same way whether it was set up, or how many were removed.
   */
  readonly status: { readonly single: string } | { readonly item: z.ZodType; readonly description?: string };
  /** The message key of its row on the administrators' page of a user (a count, or set up / none). */
  readonly adminLabel: string;
  /** The account's factors of this kind, as the status lists them (JSON values); through `db` when given (a transaction). */
  list(userId: string, db?: Db): Promise<readonly unknown[]>;
  /** Removes every factor of this kind of the account through `trx` (an administrator's reset); how many there were. */
  removeAll(trx: Db, userId: string): Promise<number>;
  /**
   * The condition "the user has a factor of this kind" on a users query (the administrators' list
   * filter and the overview's adoption count), over this kind's own table. A kind without it is
   * left out of those counts.
   */
  readonly isHeldBy?: UserCondition;
}

/** Whether an account has at most one factor of `kind`: shown and audited as set up or not. */
export const isSingle = (kind: SecondFactorKind): boolean => 'single' in kind.status;
