/** What the admin pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';

/** Codes on the admin pages' `?notice=`: what a form just did. An unknown one shows nothing. */
const ADMIN_NOTICES: Readonly<Record<string, string>> = {
  ROLES_SAVED: 'Roles saved. They apply from the user’s next request (with SESSION_STRATEGY=jwt, from their next token refresh).',
  USER_DISABLED: 'The account is disabled, and all of its sessions have ended.',
  USER_ENABLED: 'The account is enabled: the user can sign in again.',
  SESSION_ENDED: 'The session has ended.',
  SESSIONS_ENDED: 'All of the user’s sessions have ended.',
  USER_DELETED: 'The account is deleted: its sessions and app grants have ended, and its personal data is erased from the audit log.',
};

/** Codes on the admin pages' `?error=`: why a form did nothing, or what a link got wrong. */
const ADMIN_ERRORS: Readonly<Record<string, string>> = {
  SELF_LOCKOUT: 'You cannot disable your own account or remove your own ADMIN role: nobody might be left to undo it. Ask another administrator. Nothing was changed.',
  INVALID_ROLE: 'Role names are capital letters A–Z, digits and _, start with a letter and are at most 64 characters long. Nothing was changed.',
  TOO_MANY_ROLES: 'That is too many roles for one user. Nothing was changed.',
  USER_NOT_FOUND: 'There is no such user.',
  SELF_DELETION_VIA_ADMIN: 'Delete your own account from your dashboard, not here. Nothing was deleted.',
  LAST_ADMIN: 'This is the only enabled administrator: make someone else an ADMIN first. Nothing was deleted.',
  ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED: 'This user is the only owner of an organization with other members: an owner must be added, or the organization deleted, first. Nothing was deleted.',
  SESSION_NOT_FOUND: 'That session had already ended.',
  INVALID_CURSOR: 'That page link is not valid. Showing the first page.',
  UNKNOWN_EVENT_TYPE: 'There is no event type of that name. Showing events of every type.',
  NOT_FOUND: 'There is no such user or session.',
  VALIDATION_ERROR: 'That request was incomplete. Please try again.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const ADMIN_ERROR_DEFAULT = 'That did not work. Please try again.';

/** The message for an admin page's notice code, or null for an unknown code (nothing is shown). */
export function adminNoticeMessage(code: string): string | null {
  return messageFor<string | null>(ADMIN_NOTICES, code, null);
}

export function adminErrorMessage(code: string): string {
  return messageFor(ADMIN_ERRORS, code, ADMIN_ERROR_DEFAULT);
}
