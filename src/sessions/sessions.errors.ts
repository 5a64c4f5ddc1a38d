/** The error codes the sessions module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const SESSIONS_ERRORS = defineErrorCodes('sessions', {
  TOKEN_REUSED: { status: 401, message: 'This refresh token was already used; the session has been ended for safety.' },
});

type SessionsErrorCodes = typeof SESSIONS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends SessionsErrorCodes {}
}
