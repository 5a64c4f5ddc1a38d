/** What the organization pages say about the codes in their URL (`?error=`, `?notice=`; see web/messages.ts). */
import { messageFor } from '../web/messages.ts';

const ERRORS: Readonly<Record<string, string>> = {
  ORGANIZATION_NOT_FOUND: 'There is no such organization among yours.',
  ORGANIZATION_ROLE_REQUIRED: 'Your role in this organization does not allow that.',
  ORGANIZATION_CREATION_DISABLED: 'You may not create organizations on this server.',
  ORGANIZATION_LIMIT_REACHED: 'You own as many organizations as you may.',
  SLUG_TAKEN: 'Another organization has this slug: choose another.',
  LAST_OWNER: 'An organization must keep at least one owner: make another member owner first, or delete the organization.',
  MEMBER_NOT_FOUND: 'That person is not a member of this organization.',
  ALREADY_MEMBER: 'That person is a member already.',
  INVITATION_NOT_FOUND: 'That invitation is no longer pending.',
  INVITATION_INVALID: 'This invitation link is not valid: it may have been used, declined or revoked.',
  INVITATION_EXPIRED: 'This invitation has expired: ask for a new one.',
  INVITATION_EMAIL_MISMATCH: 'This invitation is for another e-mail address. Sign out, then sign in with the invited address.',
  INVITATION_EMAIL_UNVERIFIED: 'Verify your e-mail address first: follow the link in the message we sent you, then accept again.',
  CONFIRMATION_MISMATCH: 'Type the organization’s slug exactly to confirm its deletion.',
  VALIDATION_ERROR: 'Some fields are not valid: check them and try again.',
  RATE_LIMITED: 'Too many invitations for now. Try again later.',
  CSRF_FAILED: 'The form expired. Please try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};

const NOTICES: Readonly<Record<string, string>> = {
  ORGANIZATION_CREATED: 'The organization is created: you are its owner.',
  ORGANIZATION_SAVED: 'Saved.',
  ORGANIZATION_DELETED: 'The organization is deleted.',
  ORGANIZATION_LEFT: 'You left the organization.',
  ROLE_CHANGED: 'The role is changed.',
  MEMBER_REMOVED: 'The member is removed.',
  OWNERSHIP_TRANSFERRED: 'Ownership is transferred: you are now an admin.',
  INVITATION_SENT: 'The invitation is on its way. The link works once.',
  INVITATION_REVOKED: 'The invitation is revoked: its link no longer works.',
  INVITATION_ACCEPTED: 'Welcome: you are a member now.',
  INVITATION_DECLINED: 'The invitation is declined.',
  ORGANIZATION_ACTIVATED: 'The active organization is changed.',
};

export const organizationErrorMessage = (code: string) => messageFor(ERRORS, code, 'That did not work. Please try again.');
export const organizationNoticeMessage = (code: string): string | null => messageFor(NOTICES, code, null);
