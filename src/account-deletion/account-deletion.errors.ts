/** The error codes account deletion answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const ACCOUNT_DELETION_ERRORS = defineErrorCodes('account-deletion', {
  ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED: {
    status: 409,
    message: 'This account is the only owner of an organization that has other members: transfer its ownership, or delete the organization, first.',
  },
  LAST_ADMIN: { status: 409, message: 'This is the only enabled administrator: make someone else an ADMIN before deleting this account.' },
  SELF_DELETION_VIA_ADMIN: { status: 409, message: 'Delete your own account from your dashboard (DELETE /api/auth/account), not through the admin area.' },
});

type AccountDeletionErrorCodes = typeof ACCOUNT_DELETION_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends AccountDeletionErrorCodes {}
}
