/** The rate-limits section of the configuration: every endpoint's limit (`RATE_LIMIT_…=points/window`). */
import type { RateLimit } from '../config/env-reader.ts';
import type { ConfigSection } from '../config.ts';

declare module '../config.ts' {
  interface Config {
    readonly rateLimits: {
      /** Every sign-in attempt (password, either endpoint), per client IP: stops floods. */
      readonly signinPerIp: RateLimit;
      /** Failed sign-ins per client IP: people at one office address who sign in correctly never count. */
      readonly signinFailuresPerIp: RateLimit;
      readonly signupPerIp: RateLimit;
      /** Mails asked for (forgot-password, verification resend), per address and per client IP. */
      readonly mailPerAddress: RateLimit;
      readonly mailPerIp: RateLimit;
      /** Uses of mailed tokens (reset, validate, verify), per client IP. */
      readonly tokenPerIp: RateLimit;
      readonly refreshPerIp: RateLimit;
      /** Provider sign-in and link starts, per client IP. */
      readonly oauthPerIp: RateLimit;
      /** New passwords refused by the policy, per account (change-password, reset links) and per client IP (everywhere). */
      readonly passwordRefusalsPerAccount: RateLimit;
      readonly passwordRefusalsPerIp: RateLimit;
    };
  }
}

/**
 * The rate-limits module's section: `rateLimits`, one object, since its limits are counted by
 * several modules (the request limits built here, the credentials module's sign-in throttle and
 * password refusals).
 */
export const rateLimitsConfigSection: ConfigSection = (read) => ({
  rateLimits: {
    signinPerIp: read.rateLimit('RATE_LIMIT_SIGNIN_PER_IP', { points: 60, durationSeconds: 60 }),
    signinFailuresPerIp: read.rateLimit('RATE_LIMIT_SIGNIN_FAILURES_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
    signupPerIp: read.rateLimit('RATE_LIMIT_SIGNUP_PER_IP', { points: 10, durationSeconds: 3_600 }),
    mailPerAddress: read.rateLimit('RATE_LIMIT_MAIL_PER_ADDRESS', { points: 3, durationSeconds: 3_600 }),
    mailPerIp: read.rateLimit('RATE_LIMIT_MAIL_PER_IP', { points: 20, durationSeconds: 3_600 }),
    tokenPerIp: read.rateLimit('RATE_LIMIT_TOKEN_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
    refreshPerIp: read.rateLimit('RATE_LIMIT_REFRESH_PER_IP', { points: 120, durationSeconds: 60 }),
    oauthPerIp: read.rateLimit('RATE_LIMIT_OAUTH_PER_IP', { points: 30, durationSeconds: 60 }),
    // New passwords the policy refused (sign-up, reset, change, admin create): each costs an
    // estimate of up to half a second in the one estimator worker. A person finds an acceptable
    // password in a few tries; these bound what one account or one address can spend on refusals.
    passwordRefusalsPerAccount: read.rateLimit('RATE_LIMIT_PASSWORD_REFUSALS_PER_ACCOUNT', { points: 10, durationSeconds: 15 * 60 }),
    passwordRefusalsPerIp: read.rateLimit('RATE_LIMIT_PASSWORD_REFUSALS_PER_IP', { points: 30, durationSeconds: 15 * 60 }),
  },
});
