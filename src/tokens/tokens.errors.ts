/** The error codes the tokens module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const TOKENS_ERRORS = defineErrorCodes('tokens', {
  INVALID_TOKEN: { status: 401, message: 'The token is invalid or has expired.' },
  TOKEN_EXPIRED: { status: 400, message: 'This link has expired. Ask for a new one.' },
});

type TokensErrorCodes = typeof TOKENS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends TokensErrorCodes {}
}
