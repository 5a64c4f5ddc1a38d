/**
 * What makes a password acceptable, after NIST SP 800-63B: a minimum length counted in
 * characters (not bytes), a generous maximum, no composition rules, and a refusal of passwords
 * that are known to be common or that merely repeat the account's own e-mail or name.
 */
import { COMMON_PASSWORDS } from './common-passwords.ts';

export interface PasswordPolicy {
  minLength: number;
  maxLength: number;
}

export type PasswordRejection =
  | { reason: 'TOO_SHORT'; message: string }
  | { reason: 'TOO_LONG'; message: string }
  | { reason: 'TOO_COMMON'; message: string }
  | { reason: 'CONTAINS_IDENTITY'; message: string };

/** Returns why the password is refused, or null when it is acceptable. */
export function checkPassword(
  password: string,
  policy: PasswordPolicy,
  identity: { email?: string; name?: string } = {},
): PasswordRejection | null {
  const normalised = password.normalize('NFKC');
  const length = countCharacters(normalised);
  if (length < policy.minLength) {
    return { reason: 'TOO_SHORT', message: `must be at least ${policy.minLength} characters` };
  }
  if (length > policy.maxLength) {
    return { reason: 'TOO_LONG', message: `must be at most ${policy.maxLength} characters` };
  }
  const folded = normalised.toLowerCase();
  if (COMMON_PASSWORDS.has(folded) || new Set(folded).size <= 2) {
    return { reason: 'TOO_COMMON', message: 'is too common or too easy to guess' };
  }
  const localPart = identity.email?.split('@')[0]?.toLowerCase();
  const name = identity.name?.trim().toLowerCase();
  if (folded === identity.email?.toLowerCase() || (localPart && localPart.length >= 4 && folded === localPart) || (name && name.length >= 4 && folded === name)) {
    return { reason: 'CONTAINS_IDENTITY', message: 'must not be your e-mail address or name' };
  }
  return null;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Characters as a person counts them: `é` or `🗝️` is one, whatever its code points. */
function countCharacters(text: string): number {
  let count = 0;
  for (const _ of graphemes.segment(text)) count++;
  return count;
}
