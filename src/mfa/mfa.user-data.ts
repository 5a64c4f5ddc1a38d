/**
 * What the MFA module holds of a user (module.ts, `userData`): their second factors and recovery
 * codes, exported as `GET /api/auth/mfa` shows them (whether each is set up, or the list of them;
 * how many codes are left), never a secret or a code. Their rows go with the user's, on cascade.
 */
import type { UserDataHandler } from '../module.ts';
import { isSingle } from '../signin/second-factor-kind.ts';
import type { MfaService } from './mfa.service.ts';

export function mfaUserData(mfa: Pick<MfaService, 'status'>): UserDataHandler {
  return {
    async export(userId) {
      const { factors, recoveryCodesLeft } = await mfa.status(userId);
      return { ...Object.fromEntries(factors.map(({ kind, items }) => [kind.statusKey, isSingle(kind) ? items.length > 0 : items])), recoveryCodesLeft };
    },
  };
}
