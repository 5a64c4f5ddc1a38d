/**
 * What makes a new password acceptable, after NIST SP 800-63B-4: a minimum length counted in
 * code points after NFKC (no composition rules), at least 128 accepted, and a refusal, with a
 * reason a person can act on, of passwords that an attacker would guess early: common passwords,
 * keyboard walks, dates, and anything built from the account's e-mail, name or the service's name.
 * Guessability is estimated by zxcvbn-ts with its common-password and English dictionaries,
 * a maintained estimator rather than a list of our own.
 */
import { strengthEstimator, type StrengthEstimate } from './password-strength.ts';

export interface PasswordPolicy {
  minLength: number;
  maxLength: number;
  /** zxcvbn score (0–4) a password must reach; 3 is "safely unguessable" (about 10^8 guesses). */
  minScore: number;
}

export type PasswordRejection =
  | { reason: 'TOO_SHORT'; message: string }
  | { reason: 'TOO_LONG'; message: string }
  | { reason: 'TOO_COMMON'; message: string }
  | { reason: 'CONTAINS_IDENTITY'; message: string }
  | { reason: 'TOO_GUESSABLE'; message: string };

/** Words of ours an attacker would try first, besides the user's own. */
const SERVICE_WORDS = ['gatehouse', 'gate house', 'auth', 'login', 'signin', 'admin'];
/** zxcvbn's cost grows quickly with length; past this, the rest of a long password adds strength anyway. */
const ESTIMATED_PREFIX_LENGTH = 100;

/** Returns why the password is refused, or null when it is acceptable. */
export async function checkPassword(
  password: string,
  policy: PasswordPolicy,
  identity: { email?: string; name?: string } = {},
): Promise<PasswordRejection | null> {
  const normalised = password.normalize('NFKC');
  const length = [...normalised].length;
  if (length < policy.minLength) {
    return { reason: 'TOO_SHORT', message: `must be at least ${policy.minLength} characters` };
  }
  if (length > policy.maxLength) {
    return { reason: 'TOO_LONG', message: `must be at most ${policy.maxLength} characters` };
  }

  const userInputs = identityWords(identity);
  const estimate = await strengthEstimator.estimate([...normalised].slice(0, ESTIMATED_PREFIX_LENGTH).join(''), userInputs);
  if (estimate.score >= policy.minScore) return null;
  return explain(estimate);
}

function identityWords(identity: { email?: string; name?: string }): string[] {
  const words = new Set(SERVICE_WORDS);
  const email = identity.email?.trim().toLowerCase();
  if (email) {
    words.add(email);
    const [local = '', domain = ''] = email.split('@');
    words.add(local);
    for (const part of local.split(/[._+-]+/)) if (part.length >= 3) words.add(part);
    const domainName = domain.split('.')[0];
    if (domainName !== undefined && domainName.length >= 3) words.add(domainName);
  }
  const name = identity.name?.trim().toLowerCase();
  if (name) {
    words.add(name);
    for (const part of name.split(/\s+/)) if (part.length >= 3) words.add(part);
  }
  return [...words];
}

function explain(estimate: StrengthEstimate): PasswordRejection {
  const dictionaries = estimate.dictionaryNames;
  if (dictionaries.includes('userInputs')) {
    return { reason: 'CONTAINS_IDENTITY', message: 'must not be built from your e-mail address, your name or the name of this service' };
  }
  if (dictionaries.some((name) => name.startsWith('passwords'))) {
    return { reason: 'TOO_COMMON', message: 'is too common: it is on lists of passwords attackers try first' };
  }
  const hint = estimate.warning ?? estimate.suggestion ?? 'Add more words that are less common.';
  return { reason: 'TOO_GUESSABLE', message: `is too easy to guess. ${hint}` };
}
