/** A user as an operator sees one in JSON: the admin API's `AdminUser` and `gatehouse users list --json`. Never a hash or a secret. */
import { isoTime } from '../lib/clock.ts';
import type { User } from './user.service.ts';

export function toUserJson(user: User) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    roles: user.roles,
    emailVerified: user.emailVerifiedAt !== null,
    disabled: user.disabledAt !== null,
    /** The language stored with the account, null for none. */
    locale: user.locale,
    createdAt: isoTime(user.createdAt),
    updatedAt: isoTime(user.updatedAt),
  };
}
