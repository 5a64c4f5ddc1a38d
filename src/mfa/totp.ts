/**
 * TOTP (RFC 6238) with the parameters every authenticator app supports: HMAC-SHA1, 6 digits,
 * 30-second steps. The one-time-password arithmetic is otpauth's; this file fixes the parameters,
 * refuses malformed input before the library sees it, and reports which time step a code belongs
 * to, so that the caller can refuse a replay by storing the last step it accepted.
 *
 * Time comes in as `now` (epoch milliseconds) from the service's clock: never Date.now here.
 */
import { randomBytes } from 'node:crypto';
import type * as OtpAuth from 'otpauth';
import { onFirstUse } from '../lib/on-first-use.ts';

/** otpauth is loaded at the first TOTP enrolment or code, not at start (idle memory is a budget: perf/analysis.md). */
const loadOtpAuth = onFirstUse<typeof OtpAuth>(import.meta.url, 'otpauth');

const ALGORITHM = 'SHA1';
const DIGITS = 6;
const PERIOD_SECONDS = 30;
/** 160 bits: the length RFC 4226 recommends, and the HMAC-SHA1 block's natural key size. */
const SECRET_BYTES = 20;
/** How a secret we made looks: 160 bits are exactly 32 base32 characters, no padding. */
const SECRET_PATTERN = /^[A-Z2-7]{32}$/;
/**
 * Steps accepted either side of the current one: a phone clock a little off, or a code typed as it
 * rolled over. Each extra step is one more code an attacker may guess per try, so no more than one.
 */
const WINDOW_STEPS = 1;
const CODE_PATTERN = /^[0-9]{6}$/;
/** Longer input than this is not a code with spaces in it; refused before any regex runs on it. */
const MAX_CODE_INPUT_LENGTH = 32;

export interface TotpUrlInput {
  /** The base32 secret from `createTotpSecret`. */
  secret: string;
  /** Shown by the authenticator app above the account, e.g. "Gatehouse" or the site's name. */
  issuer: string;
  /** The user's e-mail address: how the user tells accounts apart in the app. */
  email: string;
}

export interface TotpCodeInput {
  secret: string;
  /** As the user typed it: spaces are allowed ("123 456"), nothing else. */
  code: unknown;
  /** Epoch milliseconds. */
  now: number;
}

export interface AcceptCodeInput extends TotpCodeInput {
  /** The step of the last code accepted for this user, or null if none was ever accepted. */
  lastUsedStep: number | null;
}

/** A new random TOTP secret: 160 bits from node:crypto, base32 (RFC 4648) as apps expect it. */
export function createTotpSecret(): string {
  // Copied into an ArrayBuffer of its own: a Buffer's `.buffer` may be a larger shared pool.
  return new (loadOtpAuth().Secret)({ buffer: Uint8Array.from(randomBytes(SECRET_BYTES)).buffer }).base32;
}

/** The otpauth:// key URI (Google Authenticator's format) that enrolment shows as a QR code. */
export function totpUrl({ secret, issuer, email }: TotpUrlInput): string {
  if (issuer.length === 0) throw new RangeError('A TOTP issuer label is required');
  // The label is "issuer:account", and apps split it at the first colon even when it is
  // percent-encoded (the key URI format forbids colons in both parts).
  if (issuer.includes(':') || email.includes(':')) throw new RangeError('A TOTP issuer or account may not contain ":"');
  return new (loadOtpAuth().TOTP)({
    issuer,
    label: email,
    issuerInLabel: true,
    secret: parseSecret(secret),
    algorithm: ALGORITHM,
    digits: DIGITS,
    period: PERIOD_SECONDS,
  }).toString();
}

/**
 * The time step (an integer counter) whose code `code` is, within one step of `now`; null for a
 * wrong or malformed code. This alone does not stop replays: sign-in and enrolment use `acceptCode`.
 */
export function verifyCode({ secret, code, now }: TotpCodeInput): number | null {
  return acceptCode({ secret, code, now, lastUsedStep: null })?.step ?? null;
}

/**
 * Accepts a code only for a step later than `lastUsedStep`, so each code (each step) works once,
 * and a code older than one already used never does. The caller stores the returned step as the
 * new last used step, conditionally on the old value, in the transaction that accepts the code.
 *
 * Steps are tried one by one, skipping used ones, rather than taking the library's first match:
 * in the rare case that two adjacent steps share a code, a used step must not hide a fresh one.
 */
export function acceptCode({ secret, code, now, lastUsedStep }: AcceptCodeInput): { step: number } | null {
  const token = parseCode(code);
  if (token === null) return null;
  const key = parseSecret(secret);
  for (const step of candidateSteps(now)) {
    if (lastUsedStep !== null && step <= lastUsedStep) continue;
    if (matchesStep(key, token, step)) return { step };
  }
  return null;
}

/** Six ASCII digits once spaces are removed, or null. */
function parseCode(code: unknown): string | null {
  if (typeof code !== 'string' || code.length > MAX_CODE_INPUT_LENGTH) return null;
  const digits = code.replace(/\s/g, '');
  return CODE_PATTERN.test(digits) ? digits : null;
}

/**
 * Only secrets of the shape we create are used: an empty or short stored secret would make codes
 * that anyone can compute, so it is a loud error rather than a quiet weak check.
 */
function parseSecret(secret: string): OtpAuth.Secret {
  if (!SECRET_PATTERN.test(secret)) throw new RangeError('A TOTP secret must be 32 base32 characters (160 bits)');
  return loadOtpAuth().Secret.fromBase32(secret);
}

/** The current step first, then the one before, then the one after (the likeliest first). */
function candidateSteps(now: number): number[] {
  if (!Number.isFinite(now) || now < 0) throw new RangeError('now must be a time in epoch milliseconds');
  const current = loadOtpAuth().TOTP.counter({ period: PERIOD_SECONDS, timestamp: now });
  const steps = [current];
  for (let offset = 1; offset <= WINDOW_STEPS; offset++) steps.push(current - offset, current + offset);
  return steps.filter((step) => step >= 0);
}

/** A TOTP code at step s is the HOTP code at counter s; the library compares in constant time. */
function matchesStep(secret: OtpAuth.Secret, token: string, step: number): boolean {
  return loadOtpAuth().HOTP.validate({ token, secret, algorithm: ALGORITHM, digits: DIGITS, counter: step, window: 0 }) === 0;
}
