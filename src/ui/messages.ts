/**
 * What the pages tell a person about an error code. Codes arrive in query strings, so anyone can
 * put anything there: lookups are own-property only (`?error=constructor` is just unknown), and
 * the code itself is shown back only through the escaping templates.
 */

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

/** Codes on the admin pages' `?notice=`: what a form just did. An unknown one shows nothing. */
const ADMIN_NOTICES: Readonly<Record<string, string>> = {
  ROLES_SAVED: 'Roles saved. They apply from the user’s next request (with SESSION_STRATEGY=jwt, from their next token refresh).',
  USER_DISABLED: 'The account is disabled, and all of its sessions have ended.',
  USER_ENABLED: 'The account is enabled: the user can sign in again.',
  SESSION_ENDED: 'The session has ended.',
  SESSIONS_ENDED: 'All of the user’s sessions have ended.',
};

/** Codes on the admin pages' `?error=`: why a form did nothing, or what a link got wrong. */
const ADMIN_ERRORS: Readonly<Record<string, string>> = {
  SELF_LOCKOUT: 'You cannot disable your own account or remove your own ADMIN role: nobody might be left to undo it. Ask another administrator. Nothing was changed.',
  INVALID_ROLE: 'Role names are capital letters A–Z, digits and _, start with a letter and are at most 64 characters long. Nothing was changed.',
  TOO_MANY_ROLES: 'That is too many roles for one user. Nothing was changed.',
  USER_NOT_FOUND: 'There is no such user.',
  SESSION_NOT_FOUND: 'That session had already ended.',
  INVALID_CURSOR: 'That page link is not valid. Showing the first page.',
  UNKNOWN_EVENT_TYPE: 'There is no event type of that name. Showing events of every type.',
  NOT_FOUND: 'There is no such user or session.',
  VALIDATION_ERROR: 'That request was incomplete. Please try again.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const ADMIN_ERROR_DEFAULT = 'That did not work. Please try again.';

function lookup<T>(table: Readonly<Record<string, T>>, code: string, fallback: T): T {
  return Object.hasOwn(table, code) ? table[code]! : fallback;
}

export function signInErrorMessage(code: string): string {
  return lookup(SIGN_IN_MESSAGES, code, SIGN_IN_DEFAULT);
}

export function authErrorExplanation(code: string): ErrorExplanation {
  return lookup(AUTH_ERRORS, code, AUTH_ERROR_DEFAULT);
}

export function dashboardErrorMessage(code: string): string {
  return lookup(DASHBOARD_MESSAGES, code, DASHBOARD_DEFAULT);
}

/** The message for an admin page's notice code, or null for an unknown code (nothing is shown). */
export function adminNoticeMessage(code: string): string | null {
  return lookup<string | null>(ADMIN_NOTICES, code, null);
}

export function adminErrorMessage(code: string): string {
  return lookup(ADMIN_ERRORS, code, ADMIN_ERROR_DEFAULT);
}

// ---------------------------------------------------------------------------------------------
// Sign-up and e-mail verification pages (`/auth/signup`, `/auth/verify-email`).
// ---------------------------------------------------------------------------------------------

/** Codes on `/auth/signup?error=`, from its form. */
const SIGNUP_ERRORS: Readonly<Record<string, string>> = {
  VALIDATION_ERROR: 'Enter your name, a valid email address and a password.',
  SIGNUP_DISABLED: 'Sign-up is turned off on this service. Ask your administrator for an account.',
  CSRF_FAILED: 'Your sign-up form expired or did not come from this site. Please try again.',
  RATE_LIMITED: 'Too many attempts. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const SIGNUP_ERROR_DEFAULT = 'Sign-up failed. Please try again.';

/** Why a new password was refused, by the policy's reason code (`?reason=` on the sign-up page). */
function passwordRejectionMessages(limits: { minLength: number; maxLength: number }): Readonly<Record<string, string>> {
  return {
    TOO_SHORT: `That password is too short: use at least ${limits.minLength} characters. A few unrelated words make a good one.`,
    TOO_LONG: `That password is too long: use at most ${limits.maxLength} characters.`,
    TOO_COMMON: 'That password is on the lists of passwords attackers try first. Choose another.',
    CONTAINS_IDENTITY: 'That password is built from your email address, your name or the name of this service. Choose one that is not.',
    TOO_GUESSABLE: 'That password is too easy to guess. Add more words, preferably uncommon ones.',
  };
}

/**
 * The message for a sign-up error; with `reason` (a password refusal), the reason's own message.
 * Both arrive in the query string, so unknown values fall back to the defaults.
 */
export function signupErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string {
  if (code === 'VALIDATION_ERROR' && reason !== undefined) {
    const message = lookup<string | null>(passwordRejectionMessages(limits), reason, null);
    if (message !== null) return message;
  }
  return lookup(SIGNUP_ERRORS, code, SIGNUP_ERROR_DEFAULT);
}

/** Codes on `/auth/verify-email?error=`, and the state of a link's token. */
const VERIFY_EMAIL_ERRORS: Readonly<Record<string, string>> = {
  INVALID_TOKEN: 'This verification link is not valid: it may have been used already, or a newer link replaced it. If your address is not verified yet, ask for a new link below.',
  TOKEN_EXPIRED: 'This verification link has expired. Ask for a new one below.',
  VALIDATION_ERROR: 'Enter a valid email address.',
  RATE_LIMITED: 'Too many attempts. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const VERIFY_EMAIL_ERROR_DEFAULT = 'That did not work. Please try again.';

export function verifyEmailErrorMessage(code: string): string {
  return lookup(VERIFY_EMAIL_ERRORS, code, VERIFY_EMAIL_ERROR_DEFAULT);
}

// ---------------------------------------------------------------------------------------------
// Password reset and change (`/auth/forgot-password`, `/auth/reset-password`, and the dashboard's
// change-password form). A refused password's `reason` reuses `passwordRejectionMessages` above.
// ---------------------------------------------------------------------------------------------

/** Codes on `/auth/forgot-password?error=`, from its form. */
const FORGOT_PASSWORD_ERRORS: Readonly<Record<string, string>> = {
  VALIDATION_ERROR: 'Enter a valid email address.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const FORGOT_PASSWORD_ERROR_DEFAULT = 'That did not work. Please try again.';

/** Codes on `/auth/reset-password?error=`: the state of the link's token, or why its form came back. */
const RESET_PASSWORD_ERRORS: Readonly<Record<string, string>> = {
  INVALID_TOKEN: 'This password reset link is not valid: it was used already, or a newer link replaced it. Ask for a new one below.',
  TOKEN_EXPIRED: 'This password reset link has expired. Ask for a new one below.',
  VALIDATION_ERROR: 'Enter a new password.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Open the link from your email again in a moment.',
};
const RESET_PASSWORD_ERROR_DEFAULT = 'That did not work. Open the link from your email again.';

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

function passwordRefusalMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string | null {
  if (code !== 'VALIDATION_ERROR' || reason === undefined) return null;
  return lookup<string | null>(passwordRejectionMessages(limits), reason, null);
}

export function forgotPasswordErrorMessage(code: string): string {
  return lookup(FORGOT_PASSWORD_ERRORS, code, FORGOT_PASSWORD_ERROR_DEFAULT);
}

/** The message for the reset page's `?error=` (and `&reason=` for a refused password). */
export function resetPasswordErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string {
  return passwordRefusalMessage(code, reason, limits) ?? lookup(RESET_PASSWORD_ERRORS, code, RESET_PASSWORD_ERROR_DEFAULT);
}

/** The message for a change-password form's error on the dashboard, or null when the code is none of its own. */
export function changePasswordErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string | null {
  return passwordRefusalMessage(code, reason, limits) ?? lookup<string | null>(CHANGE_PASSWORD_ERRORS, code, null);
}

/** The message for the dashboard's `?notice=`, or null for an unknown code (nothing is shown). */
export function dashboardNoticeMessage(code: string): string | null {
  return lookup<string | null>(DASHBOARD_NOTICES, code, null);
}
