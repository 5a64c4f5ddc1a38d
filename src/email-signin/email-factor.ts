/**
 * A mailed link or code as the first factor of a sign-in (signin/first-factor.ts). It proves the
 * account's mailbox: `provesEmail`, so the pipeline stamps an unverified address verified. `amr`
 * is `email`, and `otp` too when a code was typed. A challenge (a second factor) keeps which way it
 * was and a SHA-256 of the address it reached: the sign-in finishes only while that address is still
 * the account's.
 */
import type { FirstFactor, FirstFactorKind } from '../signin/first-factor.ts';
import { sha256Base64url } from '../lib/random.ts';
import { normaliseEmail } from '../users/email.ts';

export const EMAIL_FACTOR = 'email';

/** How the mail was used: its link followed, or its code typed. */
export type EmailMethod = 'link' | 'code';

const isMethod = (value: string | undefined): value is EmailMethod => value === 'link' || value === 'code';

/** The first factor of a sign-in by the mail sent to `email` (the account's address). */
export function emailFactor(email: string, method: EmailMethod): FirstFactor {
  const address = normaliseEmail(email);
  return {
    kind: EMAIL_FACTOR,
    amr: method === 'code' ? ['email', 'otp'] : ['email'],
    audit: { email: address, details: { emailMethod: method } },
    provesEmail: true,
    binding: `${method}:${sha256Base64url(address)}`,
  };
}

export const emailFactorKind: FirstFactorKind = {
  kind: EMAIL_FACTOR,
  // Held while the account's address is still the one the mail reached.
  async resume({ user, binding }) {
    const [method, hash] = (binding ?? '').split(':');
    if (!isMethod(method) || hash !== sha256Base64url(normaliseEmail(user.email))) return null;
    return emailFactor(user.email, method);
  },
};
