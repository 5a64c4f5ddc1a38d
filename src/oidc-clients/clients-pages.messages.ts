/** What the client registry pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';

/** Codes on `?notice=`: what a form just did. An unknown one shows nothing. */
const NOTICES: Readonly<Record<string, string>> = {
  CLIENT_REGISTERED: 'The client is registered. It is public: it has no secret, and proves itself with PKCE.',
  CLIENT_DELETED: 'The client is deleted: the provider no longer knows it.',
  CLIENT_SAVED: 'The client’s changes are saved.',
};

/** Codes on `?error=`, and of forms sent back: why a form did nothing. */
const ERRORS: Readonly<Record<string, string>> = {
  CLIENT_NOT_FOUND: 'There is no such client. It may have been deleted.',
  PUBLIC_CLIENT_HAS_NO_SECRET: 'A public client has no secret to rotate. Nothing was changed.',
  INVALID_REDIRECT_URI: 'Nothing was saved: a redirect URI is not one a client may register.',
  INVALID_CLIENT_METADATA: 'Nothing was saved: some settings are not valid.',
  VALIDATION_ERROR: 'That request was incomplete. Please try again.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};

export function clientsNoticeMessage(code: string): string | null {
  return messageFor<string | null>(NOTICES, code, null);
}

export function clientsErrorMessage(code: string): string {
  return messageFor(ERRORS, code, 'That did not work. Please try again.');
}
