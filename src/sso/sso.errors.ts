/** The error codes the SSO module answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const SSO_ERRORS = defineErrorCodes('sso', {
  SSO_CONNECTION_NOT_FOUND: { status: 404, message: 'There is no such SSO connection.' },
  SSO_INVALID_CONNECTION: { status: 422, message: 'The SSO connection cannot be saved as given (see the message).' },
  SSO_REQUIRED: { status: 403, message: 'Your organization requires signing in with its single sign-on: use "Continue with SSO".' },
  SSO_NOT_CONFIGURED: { status: 404, message: 'No single sign-on is configured for this address.' },
  SSO_SETUP_LINK_INVALID: { status: 404, message: 'This setup link is not valid: ask the organization’s owner for a new one.' },
  SSO_SETUP_LINK_EXPIRED: { status: 410, message: 'This setup link has expired: ask the organization’s owner for a new one.' },
  SSO_SETUP_LINK_REVOKED: { status: 410, message: 'This setup link was revoked: ask the organization’s owner for a new one.' },
  SSO_SETUP_TEST_NOT_FOUND: { status: 404, message: 'There is no such test sign-in for this setup link (it may have expired: start another).' },
  SSO_SETUP_LINK_NOT_FOUND: { status: 404, message: 'This organization has no active setup link with that id.' },
});

type SsoErrorCodes = typeof SSO_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends SsoErrorCodes {}
}
