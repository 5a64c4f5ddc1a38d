/**
 * The password as a first factor of the sign-in pipeline (signin/first-factor.ts). A challenge
 * keeps a SHA-256 of the hash the password was verified against (never the hash itself), and the
 * sign-in it began finishes only while that hash is still the account's: a password changed,
 * reset or rehashed meanwhile does not count.
 */
import type { UserService } from '../users/user.service.ts';
import { sha256Base64url } from '../lib/random.ts';
import type { FirstFactor, FirstFactorKind } from '../signin/first-factor.ts';

export const PASSWORD_FACTOR = 'password';

/** The first factor of a sign-in with the password of `email` (normalised), verified against `verifiedHash`. */
export function passwordFactor(email: string, verifiedHash: string): FirstFactor {
  return { kind: PASSWORD_FACTOR, amr: ['pwd'], audit: { email }, provesEmail: false, passwordHash: verifiedHash, binding: sha256Base64url(verifiedHash) };
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
