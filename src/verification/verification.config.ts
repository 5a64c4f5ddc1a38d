/** The accounts section of the configuration: sign-up, e-mail verification, and the mailed links' lifetimes. */
import type { ConfigSection } from '../config.ts';

declare module '../config.ts' {
  interface Config {
    readonly accounts: {
      /** Self-service sign-up (`POST /api/auth/signup`, `/auth/signup`). */
      readonly allowSignup: boolean;
      /** Sign-in refuses (403 EMAIL_NOT_VERIFIED, after a correct password) until the address is verified. */
      readonly requireEmailVerification: boolean;
      readonly resetTokenTtlSeconds: number;
      readonly verificationTokenTtlSeconds: number;
    };
  }
}

/**
 * The verification module's section: `accounts`, kept one object because several modules read it
 * (credentials and the sign-up pages `allowSignup`, sign-in `requireEmailVerification`,
 * password-reset `resetTokenTtlSeconds`); most of it is this module's.
 */
export const verificationConfigSection: ConfigSection = (read) => ({
  accounts: {
    allowSignup: read.boolean('ALLOW_SIGNUP', true),
    requireEmailVerification: read.boolean('REQUIRE_EMAIL_VERIFICATION', false),
    resetTokenTtlSeconds: read.duration('RESET_TOKEN_TTL', 30 * 60),
    verificationTokenTtlSeconds: read.duration('VERIFICATION_TOKEN_TTL', 24 * 3_600),
  },
});
