/**
 * What makes a new password acceptable, after NIST SP 800-63B-4: a minimum length counted in
 * code points after NFKC (no composition rules), at least 128 accepted, and a refusal, with a
 * reason a person can act on, of passwords that an attacker would guess early: common passwords,
 * keyboard walks, dates, and anything built from the account's e-mail, name or the service's name.
 * Guessability is estimated by zxcvbn-ts with its common-password and English dictionaries,
 * a maintained estimator rather than a list of our own.
 *
 * The estimate is the costly part (up to about half a second, in a worker shared by the whole
 * process: password-strength.ts), so what can be decided without it is decided first: the length,
 * a password that is the account's e-mail or name (or the service's name) as it stands, and one
 * made of a single repeated character. The estimate would refuse these too; deciding them here
 * saves its turn. The common-password lists stay in the worker, with the rest of the dictionaries
 * (about 55 MB) that this process does not hold.
 */
import { estimationInput, strengthEstimator, type StrengthEstimate, type StrengthEstimator } from './password-strength.ts';

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
/** zxcvbn's English warning for a repeated character, used for the same refusal made without it. */
const REPEATED_CHARACTER_WARNING = 'Repeated characters like "aaa" are easy to guess.';

/**
 * Returns why the password is refused, or null when it is acceptable. `caller` (the client, by
 * address) takes turns at the shared estimator with the other callers; a caller with too many
 * estimates in progress gets TooManyEstimatesError. `estimator` is for tests.
 */
export async function checkPassword(
  password: string,
  policy: PasswordPolicy,
  identity: { email?: string; name?: string } = {},
  options: { caller?: string; estimator?: StrengthEstimator } = {},
): Promise<PasswordRejection | null> {
  const normalised = password.normalize('NFKC');
  const length = [...normalised].length;
  if (length < policy.minLength) {
    return { reason: 'TOO_SHORT', message: `must be at least ${policy.minLength} characters` };
  }
  if (length > policy.maxLength) {
    return { reason: 'TOO_LONG', message: `must be at most ${policy.maxLength} characters` };
  }

  // Every estimate scores at least 0: nothing to ask.
  if (policy.minScore <= 0) return null;

  const userInputs = identityWords(identity);
  // The estimate scores an identity word 0 (it is among the first words tried). Any capitalisation
  // is refused here, as the policy means: a long address in odd capitals could pass the estimate.
  if (userInputs.includes(normalised.toLowerCase())) return identityRejection();
  // One character repeated, in the part that is judged, scores at most 1 (a few guesses per repetition).
  if (policy.minScore >= 2 && new Set(estimationInput(normalised)).size === 1) {
    return { reason: 'TOO_GUESSABLE', message: `is too easy to guess. ${REPEATED_CHARACTER_WARNING}` };
  }

  const estimate = await (options.estimator ?? strengthEstimator).estimate(normalised, userInputs, options.caller);
  if (estimate.score >= policy.minScore) return null;
  return explain(estimate);
}

function identityRejection(): PasswordRejection {
  return { reason: 'CONTAINS_IDENTITY', message: 'must not be built from your e-mail address, your name or the name of this service' };
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
  if (dictionaries.includes('userInputs')) return identityRejection();
  if (dictionaries.some((name) => name.startsWith('passwords'))) {
    return { reason: 'TOO_COMMON', message: 'is too common: it is on lists of passwords attackers try first' };
  }
  const hint = estimate.warning ?? estimate.suggestion ?? 'Add more words that are less common.';
  return { reason: 'TOO_GUESSABLE', message: `is too easy to guess. ${hint}` };
}
