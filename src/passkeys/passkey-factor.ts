/**
 * A passkey as a factor: alone, a whole sign-in (a first factor of the pipeline, two factors in
 * one: the key and the user's verification, `mfa`); after a password, a second factor registered
 * with the MFA module, which lists, counts and resets passkeys through `passkeySecondFactorKind`.
 */
import type { FirstFactor, FirstFactorKind } from '../signin/first-factor.ts';
import type { SecondFactorKind } from '../signin/second-factor-kind.ts';
import type { KeyKind, PasskeyService } from './passkeys.service.ts';
import { passkeyView, toJson } from './passkeys.schemas.ts';

export const PASSKEY_FACTOR = 'passkey';

/** The first factor of a sign-in with a user-verified passkey: `hwk` (device-bound) or `swk` (synced), `user`, `mfa`. */
export function passkeyFactor(key: { passkeyId: string; credentialId: string; keyKind: KeyKind }): FirstFactor {
  return { kind: PASSKEY_FACTOR, amr: [key.keyKind, 'user', 'mfa'], audit: { details: { passkeyId: key.credentialId } }, provesEmail: false, binding: key.passkeyId };
}

export function passkeyFactorKind(passkeys: Pick<PasskeyService, 'findKey'>): FirstFactorKind {
  return {
    kind: PASSKEY_FACTOR,
    // Held while the passkey is still the account's.
    async resume({ user, binding }) {
      const key = binding === null ? null : await passkeys.findKey(user.id, binding);
      return key === null ? null : passkeyFactor(key);
    },
  };
}

export function passkeySecondFactorKind(passkeys: Pick<PasskeyService, 'listPasskeys' | 'removeAllPasskeys'>): SecondFactorKind {
  return {
    method: PASSKEY_FACTOR,
    statusKey: 'passkeys',
    status: { item: passkeyView },
    adminLabel: 'passkeys.admin.count',
    list: async (userId, db) => (await passkeys.listPasskeys(userId, db)).map(toJson),
    removeAll: (trx, userId) => passkeys.removeAllPasskeys(trx, userId),
    // Any passkey of the account (the admin users list's "second factor" filter, the overview's adoption).
    isHeldBy: (eb) => eb.exists(eb.selectFrom('passkeys').select('passkeys.user_id').whereRef('passkeys.user_id', '=', 'users.id')),
  };
}
