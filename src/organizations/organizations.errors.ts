/** The error codes the organizations module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';
import { DENIALS } from '../../packages/protect/src/contract.ts';

export const ORGANIZATIONS_ERRORS = defineErrorCodes('organizations', {
  // 404 for an organization that does not exist and for one the caller is not a member of alike:
  // a 403 would tell a stranger that it exists.
  ORGANIZATION_NOT_FOUND: { status: 404, message: 'There is no organization with that id among yours.' },
  // The same code (and body) gatehouse-protect denies with when a token's active organization role is missing.
  ORGANIZATION_ROLE_REQUIRED: DENIALS.ORGANIZATION_ROLE_REQUIRED,
  ORGANIZATION_CREATION_DISABLED: { status: 403, message: 'You may not create organizations on this server.' },
  ORGANIZATION_LIMIT_REACHED: { status: 409, message: 'You own as many organizations as you may.' },
  SLUG_TAKEN: { status: 409, message: 'Another organization has this slug.' },
  LAST_OWNER: { status: 409, message: 'An organization must keep at least one OWNER: make another member OWNER first (or delete the organization).' },
  MEMBER_NOT_FOUND: { status: 404, message: 'That user is not a member of this organization.' },
  ALREADY_MEMBER: { status: 409, message: 'That user is a member of this organization already.' },
  INVITATION_NOT_FOUND: { status: 404, message: 'There is no pending invitation with that id.' },
  INVITATION_INVALID: { status: 400, message: 'This invitation link is not valid: it may have been used, declined or revoked.' },
  INVITATION_EXPIRED: { status: 400, message: 'This invitation has expired: ask for a new one.' },
  INVITATION_EMAIL_MISMATCH: { status: 403, message: 'This invitation is for another e-mail address: sign in with the invited address.' },
  INVITATION_EMAIL_UNVERIFIED: { status: 403, message: 'Verify your e-mail address before accepting an invitation sent to it.' },
  // One code for the inviter's budget and the address's: the answer does not say whose ran out, so
  // it tells the inviter nothing about the invitations others sent to the address.
  INVITATION_LIMIT_REACHED: { status: 429, message: 'You have sent as many invitations as you may for now, or this address has received as many as it may: try again later.' },
});

type OrganizationsErrorCodes = typeof ORGANIZATIONS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends OrganizationsErrorCodes {}
}
