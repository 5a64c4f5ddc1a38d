/**
 * The error codes of the SCIM module's management API (`/api/organizations/:id/scim-tokens`…).
 * The SCIM protocol routes (`/scim/v2`) answer in SCIM's own error shape instead (scim-http.ts).
 */
import { defineErrorCodes } from '../errors.ts';

export const SCIM_ERRORS = defineErrorCodes('scim', {
  SCIM_TOKEN_NOT_FOUND: { status: 404, message: 'This organization has no active SCIM token with that id.' },
  SCIM_TOKEN_LIMIT_REACHED: { status: 409, message: 'This organization has as many active SCIM tokens as it may: revoke one first.' },
  SCIM_ROLE_MAPPING_INVALID: { status: 400, message: 'A group may map to ADMIN, MEMBER or a custom UPPER_SNAKE role, never OWNER; each group once.' },
});

type ScimErrorCodes = typeof SCIM_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends ScimErrorCodes {}
}
