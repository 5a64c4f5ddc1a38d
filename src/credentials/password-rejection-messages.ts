/**
 * What the pages say about a new password the policy refused (`?error=VALIDATION_ERROR&reason=…`
 * on the sign-up and reset pages and on the dashboard's change-password form), by the policy's
 * reason code. The reason arrives in the query string, so an unknown one has no message here.
 */
import type { Translator } from '../i18n/translator.ts';

/** The policy's reason codes that have a message (`credentials.passwordRejected.<reason>` in the catalogs). */
const REASONS: ReadonlySet<string> = new Set(['TOO_SHORT', 'TOO_LONG', 'TOO_COMMON', 'CONTAINS_IDENTITY', 'TOO_GUESSABLE']);

/** The message for a refused password (`code` VALIDATION_ERROR with a known `reason`) in `i18n`'s language, or null for anything else. */
export function passwordRejectionMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): string | null {
  if (code !== 'VALIDATION_ERROR' || reason === undefined || !REASONS.has(reason)) return null;
  return i18n.t(`credentials.passwordRejected.${reason}`, { minLength: limits.minLength, maxLength: limits.maxLength });
}
