/** The error codes the passkeys module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const PASSKEY_ERRORS = defineErrorCodes('passkeys', {
  INVALID_PASSKEY: { status: 401, message: 'The passkey was not accepted: it is not registered here, or its answer did not verify. Try again.' },
  PASSKEY_REGISTRATION_FAILED: { status: 400, message: 'The new passkey could not be verified: start adding it again.' },
  PASSKEY_NOT_FOUND: { status: 404, message: 'No such passkey on this account.' },
  PASSKEY_ALREADY_REGISTERED: { status: 409, message: 'This passkey is already registered.' },
  PASSKEY_LIMIT_REACHED: { status: 409, message: 'This account has as many passkeys as it may have: remove one first.' },
});

type PasskeyErrorCodes = typeof PASSKEY_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends PasskeyErrorCodes {}
}
