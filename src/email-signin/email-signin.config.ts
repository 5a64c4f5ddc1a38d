/** The email-signin module's part of the configuration: `emailSignin`. */
import type { ConfigSection, RateLimit } from '../config.ts';

export interface EmailSignInConfig {
  /**
   * EMAIL_SIGNIN (default off): sign-in by a mailed link or code. Off by default because it makes
   * the mailbox enough to sign in, without the password: an operator turns it on knowingly (the
   * mailbox already resets a password, but that is noisier: a notice, every session ended).
   */
  readonly enabled: boolean;
  /** EMAIL_SIGNIN_TTL (default 10 minutes): how long a link and its code work. */
  readonly ttlSeconds: number;
  /** EMAIL_SIGNIN_SAME_BROWSER (default off): a link signs in only in the browser that asked for it. */
  readonly sameBrowser: boolean;
  /** EMAIL_SIGNIN_CODE_LENGTH (6 to 8, default 6): digits in the mailed code. */
  readonly codeLength: number;
  /** Requests (mails) per address, and per client IP. */
  readonly perAddress: RateLimit;
  readonly perIp: RateLimit;
  /** Links and codes tried per client IP. */
  readonly verifyPerIp: RateLimit;
  /** Wrong codes per address, over every request (a new request does not buy more guesses). */
  readonly wrongCodesPerAddress: RateLimit;
}

declare module '../config.ts' {
  interface Config {
    readonly emailSignin: EmailSignInConfig;
  }
}

/** A link lives at least a minute (mail is slow) and at most an hour (it is a key to the account). */
const TTL_RANGE = { min: 60, max: 3_600 };

export const emailSignInConfigSection: ConfigSection = (read, _basis, problems) => {
  const ttlSeconds = read.duration('EMAIL_SIGNIN_TTL', 10 * 60);
  if (ttlSeconds < TTL_RANGE.min || ttlSeconds > TTL_RANGE.max) problems.push(`EMAIL_SIGNIN_TTL must be from 1m to 1h (got ${ttlSeconds} seconds)`);
  return {
  emailSignin: {
    enabled: read.boolean('EMAIL_SIGNIN', false),
    ttlSeconds,
    sameBrowser: read.boolean('EMAIL_SIGNIN_SAME_BROWSER', false),
    codeLength: read.integer('EMAIL_SIGNIN_CODE_LENGTH', 6, { min: 6, max: 8 }),
    perAddress: read.rateLimit('RATE_LIMIT_EMAIL_SIGNIN_PER_ADDRESS', { points: 5, durationSeconds: 3_600 }),
    perIp: read.rateLimit('RATE_LIMIT_EMAIL_SIGNIN_PER_IP', { points: 20, durationSeconds: 3_600 }),
    verifyPerIp: read.rateLimit('RATE_LIMIT_EMAIL_SIGNIN_VERIFY_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
    wrongCodesPerAddress: read.rateLimit('RATE_LIMIT_EMAIL_SIGNIN_CODES_PER_ADDRESS', { points: 20, durationSeconds: 86_400 }),
  },
  };
};
