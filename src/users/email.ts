import { z } from 'zod';

/** The longest address SMTP can carry (RFC 5321: 64 + 1 + 255, limited to 254 by the path). */
export const MAX_EMAIL_LENGTH = 254;

/**
 * The one normal form of an address, applied before storing and before every lookup, so that
 * `" Alice@Example.COM"` and its full-width look-alikes find the same account.
 */
export function normaliseEmail(email: string): string {
  return email.trim().normalize('NFKC').toLowerCase();
}

/** A request field holding an e-mail address: normalised, then checked like a browser's `type=email`. */
export const emailField = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  // A cheap bound before normalising; the real limit is checked on the normal form below.
  .max(1_000, `must be at most ${MAX_EMAIL_LENGTH} characters`)
  .transform(normaliseEmail)
  .pipe(
    z
      .string()
      .min(1, 'is required')
      .max(MAX_EMAIL_LENGTH, `must be at most ${MAX_EMAIL_LENGTH} characters`)
      .regex(z.regexes.html5Email, 'must be an e-mail address'),
  );
