/** The error codes the OIDC client registry's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const OIDC_CLIENTS_ERRORS = defineErrorCodes('oidc-clients', {
  CLIENT_NOT_FOUND: { status: 404, message: 'There is no client with that client_id.' },
  INVALID_REDIRECT_URI: { status: 422, message: 'A redirect URI is not one a client may register: see `errors`.' },
  INVALID_CLIENT_METADATA: { status: 422, message: 'The client’s settings are not valid: see `errors`.' },
  PUBLIC_CLIENT_HAS_NO_SECRET: { status: 409, message: 'A public client has no secret to rotate.' },
  KEY_CLIENT_HAS_NO_SECRET: { status: 409, message: 'A client that authenticates with its keys (private_key_jwt) has no secret to rotate.' },
});

type OidcClientsErrorCodes = typeof OIDC_CLIENTS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends OidcClientsErrorCodes {}
}
