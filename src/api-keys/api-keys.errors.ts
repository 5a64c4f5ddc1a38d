/** The error codes the api-keys module answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const API_KEYS_ERRORS = defineErrorCodes('api-keys', {
  API_KEYS_DISABLED: { status: 404, message: 'API keys are turned off on this server (API_KEYS).' },
  API_KEY_NOT_FOUND: { status: 404, message: 'There is no such API key.' },
  API_KEY_NOT_ALLOWED: { status: 403, message: 'An API key cannot do this: managing keys, passwords, second factors, changes that ask for a recent sign-in, and pages are for people signed in.' },
  API_KEY_SCOPE_REQUIRED: { status: 403, message: 'This API key reads only: a change needs a key with the write scope.' },
  API_KEY_SCOPE_NOT_ALLOWED: { status: 403, message: 'The key cannot be given that role or scope: it may only narrow what its owner holds (the admin scope for an administrator only).' },
  API_KEY_TTL_TOO_LONG: { status: 422, message: 'The key would live longer than this server allows (API_KEY_MAX_TTL).' },
  API_KEY_LIMIT_REACHED: { status: 409, message: 'There are too many active keys here; revoke one first.' },
  INTROSPECTION_CLIENT_INVALID: { status: 401, message: 'The client could not be authenticated (a registered confidential client and its secret).' },
});

type ApiKeysErrorCodes = typeof API_KEYS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends ApiKeysErrorCodes {}
}
