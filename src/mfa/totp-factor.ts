/** The authenticator app (TOTP) as a kind of second factor: the mfa module's own, offered first. */
import type { Db } from '../storage/database.ts';
import type { SecondFactorKind } from '../signin/second-factor-kind.ts';
import * as store from './mfa.store.ts';

export const TOTP_METHOD = 'totp';

export function createTotpFactorKind(db: Db): SecondFactorKind {
  return {
    method: TOTP_METHOD,
    statusKey: 'totp',
    status: { single: 'An authenticator app is set up' },
    adminLabel: 'mfa.admin.totp',
    async list(userId, on = db) {
      const row = await store.findTotp(on, userId);
      // A setup waiting for its first code is not a factor yet.
      return row?.secret_box == null ? [] : [{ enabledAt: row.enabled_at }];
    },
    async removeAll(trx, userId) {
      const removed = await store.deleteTotp(trx, userId);
      await store.deleteTotpSetup(trx, userId);
      return removed ? 1 : 0;
    },
    // A setup waiting for its first code is not a factor (as in `list`).
    isHeldBy: (eb) => eb.exists(eb.selectFrom('mfa_totp').select('mfa_totp.user_id').whereRef('mfa_totp.user_id', '=', 'users.id').where('mfa_totp.secret_box', 'is not', null)),
  };
}
