/**
 * The password as a first factor of the sign-in pipeline (signin/first-factor.ts). A challenge
 * keeps a SHA-256 of the hash the password was verified against (never the hash itself), and the
 * sign-in it began finishes only while that hash is still the account's: a password changed,
 * reset or rehashed meanwhile does not count.
 *
 * A verified hash that needs replacing (a foreign one an import brought, or argon2id with
 * parameters since raised) is replaced in the session's transaction (`onSessionStarted`), so a
 * sign-in that fails after the password (a step refusing, the session not written) leaves it as it
 * was. A sign-in that meets a challenge replaces it when the challenge is issued, and binds the
 * challenge to the new hash, so that answering it finds the hash it expects.
 */
import type { Db } from '../storage/database.ts';
import type { UserService } from '../users/user.service.ts';
import { sha256Base64url } from '../lib/random.ts';
import type { FirstFactor, FirstFactorKind } from '../signin/first-factor.ts';

export const PASSWORD_FACTOR = 'password';

/** A replacement of the verified hash: the argon2id hash of the same password, and how to write it (only over the verified one). */
export interface PasswordRehash {
  readonly hash: string;
  replace(db?: Db): Promise<boolean>;
}

/**
 * The first factor of a sign-in with the password of `email` (normalised), verified against
 * `verifiedHash`; with `rehash`, that hash is replaced in the session's transaction, and a
 * challenge is bound to the replacement (see the file's comment).
 */
export function passwordFactor(email: string, verifiedHash: string, rehash?: PasswordRehash): FirstFactor {
  const factor = { kind: PASSWORD_FACTOR, amr: ['pwd'], audit: { email }, provesEmail: false, passwordHash: verifiedHash, binding: sha256Base64url(rehash?.hash ?? verifiedHash) };
  return rehash === undefined ? factor : { ...factor, onSessionStarted: async (db) => void (await rehash.replace(db)) };
}

export function passwordFactorKind(users: Pick<UserService, 'findCredentialsById'>): FirstFactorKind {
  return {
    kind: PASSWORD_FACTOR,
    async resume({ user, binding }) {
      const hash = (await users.findCredentialsById(user.id))?.passwordHash ?? null;
      // Changed or reset since: the session must not be started on the strength of the old one.
      if (hash === null || binding !== sha256Base64url(hash)) return null;
      return passwordFactor(user.email, hash);
    },
  };
}
