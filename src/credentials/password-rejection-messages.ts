/**
 * What the pages say about a new password the policy refused (`?error=VALIDATION_ERROR&reason=…`
 * on the sign-up and reset pages and on the dashboard's change-password form), by the policy's
 * reason code. The reason arrives in the query string, so an unknown one has no message here.
 */
import { messageFor } from '../web/messages.ts';

/** Why a new password was refused, by the policy's reason code. */
function passwordRejectionMessages(limits: { minLength: number; maxLength: number }): Readonly<Record<string, string>> {
  return {
    TOO_SHORT: `That password is too short: use at least ${limits.minLength} characters. A few unrelated words make a good one.`,
    TOO_LONG: `That password is too long: use at most ${limits.maxLength} characters.`,
    TOO_COMMON: 'That password is on the lists of passwords attackers try first. Choose another.',
    CONTAINS_IDENTITY: 'That password is built from your email address, your name or the name of this service. Choose one that is not.',
    TOO_GUESSABLE: 'That password is too easy to guess. Add more words, preferably uncommon ones.',
  };
}

/** The message for a refused password (`code` VALIDATION_ERROR with a known `reason`), or null for anything else. */
export function passwordRejectionMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string | null {
  if (code !== 'VALIDATION_ERROR' || reason === undefined) return null;
  return messageFor<string | null>(passwordRejectionMessages(limits), reason, null);
}
