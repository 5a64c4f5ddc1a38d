/**
 * What the service and `gatehouse-protect` (in downstream apps) must agree on, written once: the
 * ADMIN role, the cookie names, how a Bearer header is read, the clock tolerance for `exp`/`nbf`,
 * and the denial bodies. No dependency, so the protect build carries it as it is.
 */

/** The role the seed's rules require under `/admin` and `/api/admin`. */
export const ADMIN_ROLE = 'ADMIN';

/** Seconds of clock difference accepted when checking a token's `exp` and `nbf`. */
export const CLOCK_TOLERANCE_SECONDS = 5;

/** The browser cookies the service sets; on https they carry the `__Host-` prefix (see `cookieNames`). */
export interface CookieNames {
  access: string;
  refresh: string;
  csrf: string;
}

/**
 * The cookie names for an origin: with `Secure` and the `__Host-` prefix on https, which pins them
 * to this exact origin (no Domain, Path=/), so a sibling subdomain cannot plant one.
 */
export function cookieNames(isSecureOrigin: boolean): CookieNames {
  const prefix = isSecureOrigin ? '__Host-' : '';
  return {
    access: `${prefix}gatehouse.session`,
    refresh: `${prefix}gatehouse.refresh`,
    csrf: `${prefix}gatehouse.csrf`,
  };
}

/**
 * The token of `Authorization: Bearer <token>`: undefined without the header, null for another
 * scheme or a malformed value (an explicit credential that fails never falls back to a cookie).
 */
export function readBearerToken(header: string | null | undefined): string | null | undefined {
  if (header === undefined || header === null) return undefined;
  const match = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** The route guard's denials, with the bodies both sides send. */
export const DENIALS = {
  UNAUTHENTICATED: { status: 401, message: 'Sign in to continue.' },
  FORBIDDEN: { status: 403, message: 'You do not have access to this resource.' },
  BAD_REQUEST: { status: 400, message: 'The request is malformed.' },
  STEP_UP_REQUIRED: { status: 403, message: 'Confirm it is you with your second factor to continue.' },
  /** A path the rules reserve for certain roles in the active organization (the token's `org` claim). */
  ORGANIZATION_ROLE_REQUIRED: { status: 403, message: 'Your role in the active organization does not allow this.' },
  /** `gatehouse-protect`: an Authorization header whose token does not verify (bad signature, expired, another audience): RFC 6750 `invalid_token`. */
  INVALID_TOKEN: { status: 401, message: 'The access token is invalid, has expired, or is not meant for this API.' },
  /** `gatehouse-protect`: a path the rules reserve for tokens with certain scopes (RFC 6750 `insufficient_scope`). */
  INSUFFICIENT_SCOPE: { status: 403, message: 'The access token does not carry a scope this resource needs.' },
} as const;

export type DenialReason = keyof typeof DENIALS;
