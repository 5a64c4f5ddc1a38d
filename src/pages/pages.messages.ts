/** What the sign-in, error and dashboard pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';

/** Codes on `/auth/signin?error=`: our API codes (form posts redirect there) and SessionRequired. */
const SIGN_IN_MESSAGES: Readonly<Record<string, string>> = {
  INVALID_CREDENTIALS: 'The email or password is incorrect. Check them and try again.',
  ACCOUNT_DISABLED: 'This account has been disabled. Contact your administrator if you think this is a mistake.',
  EMAIL_NOT_VERIFIED: 'Verify your email address before signing in: follow the link in the message we sent you.',
  VALIDATION_ERROR: 'Enter a valid email address and your password.',
  CSRF_FAILED: 'Your sign-in form expired or did not come from this site. Please try again.',
  RATE_LIMITED: 'Too many sign-in attempts. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
  SessionRequired: 'Please sign in to see this page.',
};
const SIGN_IN_DEFAULT = 'Sign-in failed. Please try again.';

export interface ErrorExplanation {
  heading: string;
  message: string;
}

/** Codes on `/auth/error?error=`, named as Auth.js names them, so apps moving over keep their links. */
const AUTH_ERRORS: Readonly<Record<string, ErrorExplanation>> = {
  Configuration: {
    heading: 'Server error',
    message: 'There is a problem with the server configuration: there was a problem when trying to authenticate. Please contact support if this error persists.',
  },
  AccessDenied: { heading: 'Access denied', message: 'You do not have permission to sign in.' },
  Verification: {
    heading: 'Unable to sign in',
    message: 'The sign-in link is no longer valid. It may have been used already or it may have expired.',
  },
  OAuthSignin: { heading: 'Unable to sign in', message: 'Signing in with the provider could not be started. Try again, or use another way to sign in.' },
  OAuthCallback: { heading: 'Unable to sign in', message: 'The provider’s answer could not be processed. Try signing in again.' },
  OAuthAccountNotLinked: {
    heading: 'Account not linked',
    message: 'This email address already belongs to an account that signs in another way. Sign in the way you used before, then link this provider from your account.',
  },
  AccountNotFound: { heading: 'Account not found', message: 'No account matches those details.' },
  EmailNotVerified: { heading: 'Email not verified', message: 'Verify your email address before signing in: follow the link in the message we sent you.' },
  RateLimited: { heading: 'Too many attempts', message: 'Too many attempts in a short time. Wait a moment, then try again.' },
  SessionRequired: { heading: 'Sign-in required', message: 'Please sign in to see this page.' },
  AccountDisabled: { heading: 'Account disabled', message: 'This account has been disabled. Contact your administrator if you think this is a mistake.' },
  OAuthEmailUnverified: {
    heading: 'Email not verified',
    message: 'The provider did not confirm an email address for your account there. Verify your email address with the provider (for GitHub: your primary address), then try again.',
  },
  ProviderUnreachable: {
    heading: 'Provider unreachable',
    message: 'The sign-in provider could not be reached or did not answer in time. Try again in a moment, or use another way to sign in.',
  },
};
const AUTH_ERROR_DEFAULT: ErrorExplanation = {
  heading: 'Unable to sign in',
  message: 'Something went wrong while signing in. Please try again, and contact support if this error persists.',
};

/** Codes on `/dashboard?error=`, from its session forms. */
const DASHBOARD_MESSAGES: Readonly<Record<string, string>> = {
  NOT_FOUND: 'That session had already ended.',
  IdentityInUse: 'That account at the provider is already linked to another user here. Nothing was changed.',
  ProviderAlreadyLinked: 'You already have an account at that provider linked. Unlink it first to link another one.',
  EmailNotVerified: 'Verify your email address first (follow the link we sent you), then link a provider.',
  LAST_SIGN_IN_METHOD: 'That provider is your only way to sign in. Set a password or link another provider first. Nothing was changed.',
  AccessDenied: 'You did not allow the provider to share your account, so nothing was linked.',
  OAuthCallback: 'The provider’s answer could not be processed, so nothing was linked. Try again.',
  OAuthSignin: 'Linking could not be started. Try again.',
  ProviderUnreachable: 'The provider could not be reached. Try again in a moment.',
  VALIDATION_ERROR: 'That request was incomplete. Please try again.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const DASHBOARD_DEFAULT = 'That did not work. Please try again.';

/** Codes on `/dashboard?error=` that come from its change-password form. */
const CHANGE_PASSWORD_ERRORS: Readonly<Record<string, string>> = {
  INVALID_CREDENTIALS: 'Your current password is not correct, so your password was not changed.',
};

/** Codes on `/dashboard?notice=`: what a form just did. */
const DASHBOARD_NOTICES: Readonly<Record<string, string>> = {
  PASSWORD_CHANGED: 'Your password has been changed. Your other sessions have been ended; this one stays signed in.',
  PROVIDER_LINKED: 'The provider is linked: you can now sign in with it.',
  PROVIDER_UNLINKED: 'The provider is unlinked: you can no longer sign in with it.',
};

export function signInErrorMessage(code: string): string {
  return messageFor(SIGN_IN_MESSAGES, code, SIGN_IN_DEFAULT);
}

export function authErrorExplanation(code: string): ErrorExplanation {
  return messageFor(AUTH_ERRORS, code, AUTH_ERROR_DEFAULT);
}

export function dashboardErrorMessage(code: string): string {
  return messageFor(DASHBOARD_MESSAGES, code, DASHBOARD_DEFAULT);
}

/** The message for a change-password form's error on the dashboard, or null when the code is none of its own. */
export function changePasswordErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string | null {
  return passwordRejectionMessage(code, reason, limits) ?? messageFor<string | null>(CHANGE_PASSWORD_ERRORS, code, null);
}

/** The message for the dashboard's `?notice=`, or null for an unknown code (nothing is shown). */
export function dashboardNoticeMessage(code: string): string | null {
  return messageFor<string | null>(DASHBOARD_NOTICES, code, null);
}
