/** The error codes the MFA module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const MFA_ERRORS = defineErrorCodes('mfa', {
  MFA_REQUIRED: { status: 403, message: 'Enter a code from your second factor to finish signing in.' },
  INVALID_CODE: { status: 400, message: 'The code is wrong, expired or already used.' },
  REAUTH_REQUIRED: { status: 403, message: 'For this, sign in again first: it needs a recent sign-in.' },
  MFA_ENROLLMENT_REQUIRED: { status: 403, message: 'Set up a second factor before going on: your role requires one.' },
  MFA_SETUP_REQUIRED: { status: 409, message: 'Start the authenticator app setup first.' },
  TOTP_ALREADY_ENABLED: { status: 409, message: 'An authenticator app is already set up: remove it first.' },
  MFA_NOT_ENABLED: { status: 409, message: 'No second factor is set up.' },
});

type MfaErrorCodes = typeof MFA_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends MfaErrorCodes {}
}
