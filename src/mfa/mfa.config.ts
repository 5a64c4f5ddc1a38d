/** The MFA module's part of the configuration. */
import type { ConfigSection, RateLimit } from '../config.ts';
import { isValidRole } from '../users/user.service.ts';

export interface MfaConfig {
  /** The issuer label authenticator apps show beside the account (MFA_ISSUER). */
  readonly issuer: string;
  /** Holders of these roles must enrol a second factor before reaching anything else (MFA_REQUIRED_ROLES). */
  readonly requiredRoles: readonly string[];
  /**
   * Enrolling or removing a factor, and other sensitive changes, need a sign-in (or a step-up)
   * at most this long ago (REAUTH_WINDOW); otherwise 403 REAUTH_REQUIRED.
   */
  readonly reauthWindowSeconds: number;
  /**
   * Codes tried per account since its last right one (RATE_LIMIT_MFA_CODES_PER_ACCOUNT, default
   * 20 a day), on top of the sign-in throttle: a password reset does not clear it, so someone with
   * the password and the mailbox cannot reset their way to more guesses.
   */
  readonly codesPerAccount: RateLimit;
}

declare module '../config.ts' {
  interface Config {
    readonly mfa: MfaConfig;
  }
}

export const mfaConfigSection: ConfigSection = (read, _basis, problems) => {
  const issuer = read.string('MFA_ISSUER') ?? 'Gatehouse';
  // Authenticator apps split the label at the first colon, encoded or not.
  if (issuer.includes(':') || issuer.length > 64) problems.push('MFA_ISSUER must be at most 64 characters, without a colon');
  const requiredRoles = (read.string('MFA_REQUIRED_ROLES') ?? '')
    .split(',')
    .map((role) => role.trim())
    .filter((role) => role !== '');
  const invalid = requiredRoles.filter((role) => !isValidRole(role));
  if (invalid.length > 0) problems.push(`MFA_REQUIRED_ROLES must be a comma-separated list of role names (not ${invalid.map((role) => `"${role}"`).join(', ')})`);
  const reauthWindowSeconds = read.duration('REAUTH_WINDOW', 10 * 60);
  const codesPerAccount = read.rateLimit('RATE_LIMIT_MFA_CODES_PER_ACCOUNT', { points: 20, durationSeconds: 86_400 });
  return { mfa: { issuer, requiredRoles: [...new Set(requiredRoles)], reauthWindowSeconds, codesPerAccount } };
};
