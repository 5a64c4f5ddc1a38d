/**
 * FROZEN COPY of the access decisions Gatehouse made before issue 31 (main at 70d5958), kept only
 * to prove that the redesign ("access lives on the route") changed no decision:
 * src/authorization/route-access.test.ts asks the real app and this oracle the same questions and
 * compares the answers. Do not update it to follow new behaviour, do not import it from src/, and
 * delete it once the comparison has served its purpose.
 *
 * What it copies, in the order the old app applied it:
 *   1. the route guard (src/authorization/route-guard.ts): the seed's prefix rules
 *      (packages/protect/src/rules.ts, GATEHOUSE_RULES) on both readings of the path, ADMIN as held
 *      now; which is also what admin-only.ts (`requireAdminApi`, `requireAdminPages`) asked of
 *      `/admin*` and `/api/admin*`;
 *   2. the access policies (src/authorization/access-policies.ts), on every request with a
 *      session, routed or not: the MFA policy (MFA_REQUIRED_ROLES, its EXEMPT and ADMIN_AREA lists),
 *      then the step-up policies (mfa-policy.ts's SENSITIVE list, and the copies in
 *      oidc-clients.module.ts and webhooks.module.ts);
 *   3. what the handlers checked by hand: a session (31 handlers), and a sign-in within
 *      REAUTH_WINDOW (`reauthWindowSeconds` in account-deletion, mfa, oauth and passkeys).
 * The prefix rules themselves are not copied: the shared package is unchanged by the redesign and
 * has its own tests.
 *
 * Checked against main's own app (every route and every spelling route-access.test.ts tries, for
 * its callers; and each handler check a request body could reach): the same answers.
 *
 * Answers are those to a request that is not an HTML form post (a refused form post went to the
 * route's `formErrorPage` instead) and whose body the handler would accept (the old handlers
 * checked the session after validating the body; the new hook checks it before).
 */
import { GATEHOUSE_RULES, decidePath, isApiRequestPath, isUnder, readRequestPath, type RequestPath } from '../../packages/protect/src/rules.ts';

/** Who asks, as the old code saw them. */
export interface LegacyUser {
  readonly signedIn: boolean;
  /** The roles the user holds now. */
  readonly roles: readonly string[];
  /** The user has a second factor (an authenticator app or a passkey). */
  readonly hasSecondFactor: boolean;
  /** This session used it, at any time (`mfa` in its `amr`). */
  readonly usedSecondFactor: boolean;
  /** This session used it within REAUTH_WINDOW (`mfa` in its `amr`, `auth_time` within the window). */
  readonly usedSecondFactorRecently: boolean;
  /** The session signed in (or stepped up) within REAUTH_WINDOW. */
  readonly signedInRecently: boolean;
  /** The user holds a role MFA_REQUIRED_ROLES lists. */
  readonly mfaRequiredRole: boolean;
}

export const SIGNED_OUT: LegacyUser = Object.freeze({ signedIn: false, roles: [], hasSecondFactor: false, usedSecondFactor: false, usedSecondFactorRecently: false, signedInRecently: false, mfaRequiredRole: false });

export interface LegacyRequest {
  readonly method: string;
  /** The request target as the server received it (path and query). */
  readonly url: string;
  /** The Fastify route pattern the request reached (`/api/auth/sessions/:id`), or null (a 404). */
  readonly route: string | null;
}

/** The access outcome: let through, refused (a JSON body or a page, with its code), or sent elsewhere (303). */
export type LegacyOutcome =
  | { readonly kind: 'allow' }
  | { readonly kind: 'refused'; readonly status: 400 | 401 | 403; readonly code: string; readonly as: 'json' | 'page' }
  | { readonly kind: 'redirect'; readonly location: string };

const ALLOW: LegacyOutcome = Object.freeze({ kind: 'allow' });
const ADMIN = 'ADMIN';
const SIGN_IN_PAGE = '/auth/signin';
const MFA_ENROLMENT_PAGE = '/dashboard#mfa-heading';
const NO_ROLES = Object.freeze({ roles: Object.freeze([]) });

/** Copied from src/http/sign-in-redirect.ts. */
function signInRedirect(callbackPath?: string): string {
  if (callbackPath === undefined) return SIGN_IN_PAGE;
  return `${SIGN_IN_PAGE}?callbackUrl=${encodeURIComponent(callbackPath).replaceAll('%2F', '/')}`;
}

// --- mfa-policy.ts ---------------------------------------------------------------------------

/** What a user who must enrol still reached. */
export const EXEMPT = [
  '/api/auth/mfa',
  '/api/auth/passkeys',
  '/api/auth/session',
  '/api/auth/signout',
  '/api/auth/csrf',
  '/api/auth/refresh',
  '/api/auth/signin',
  '/api/auth/providers',
  '/api/auth/callback',
  '/auth',
  '/dashboard',
  '/assets',
  '/.well-known',
  '/api/health',
  '/api/docs',
] as const;

export const ADMIN_AREA = ['/admin', '/api/admin'] as const;

/** Changes that needed a recent second factor from a user who had one: mfa-policy.ts, then the two module copies. */
export const SENSITIVE: readonly { readonly methods: readonly string[]; readonly prefix: string }[] = [
  { methods: ['POST'], prefix: '/api/auth/change-password' },
  { methods: ['DELETE'], prefix: '/api/auth/account' },
  { methods: ['POST'], prefix: '/dashboard/account/delete' },
  { methods: ['PATCH', 'POST', 'DELETE'], prefix: '/api/admin/users' },
  { methods: ['POST'], prefix: '/admin/users' },
  { methods: ['POST'], prefix: '/api/auth/mfa/totp/setup' },
  { methods: ['POST'], prefix: '/api/auth/mfa/totp/enable' },
  { methods: ['POST'], prefix: '/api/auth/passkeys/register' },
  { methods: ['DELETE'], prefix: '/api/auth/passkeys' },
  { methods: ['POST'], prefix: '/dashboard/mfa/totp/setup' },
  { methods: ['POST'], prefix: '/dashboard/mfa/totp/enable' },
  { methods: ['POST'], prefix: '/dashboard/passkeys' },
  { methods: ['POST'], prefix: '/api/auth/link' },
  // oidc-clients.module.ts (createClientsStepUpPolicy)
  { methods: ['POST', 'PATCH', 'DELETE'], prefix: '/api/admin/clients' },
  { methods: ['POST'], prefix: '/admin/clients' },
  // webhooks.module.ts (createWebhooksStepUpPolicy)
  { methods: ['POST', 'PATCH', 'DELETE'], prefix: '/api/admin/webhooks' },
  { methods: ['POST'], prefix: '/admin/webhooks' },
];

// --- the handlers' own checks -----------------------------------------------------------------

interface HandlerCheck {
  /** Without a session: 401 UNAUTHENTICATED, or a 303 to sign-in coming back to the path it names. */
  readonly signedOut?: 'json' | ((params: Record<string, string>) => string);
  /** A sign-in within REAUTH_WINDOW, else 403 REAUTH_REQUIRED: as JSON, or on the MFA module's error page. */
  readonly recentSignIn?: 'json' | 'page';
}

const json = 'json' as const;
const organizationPage = (params: Record<string, string>) => `/organizations/${encodeURIComponent(params.id ?? '')}`;

/**
 * By route (`METHOD pattern`). Routes under a prefix the guard protects (`/dashboard`, `/admin`,
 * `/api` outside `/api/auth`, `/api/health`, `/api/docs`) are listed only for what the guard did
 * not already ask (a recent sign-in): their own session checks were never reached.
 */
const HANDLERS: Readonly<Record<string, HandlerCheck>> = {
  // sessions/session.routes.ts
  'GET /api/auth/session': { signedOut: json },
  'GET /api/auth/sessions': { signedOut: json },
  'DELETE /api/auth/sessions/:id': { signedOut: json },
  'DELETE /api/auth/sessions': { signedOut: json },
  // passkeys/passkeys.routes.ts
  'POST /api/auth/passkeys/register/options': { signedOut: json, recentSignIn: json },
  'POST /api/auth/passkeys/register/verify': { signedOut: json, recentSignIn: json },
  'PATCH /api/auth/passkeys/:id': { signedOut: json },
  'DELETE /api/auth/passkeys/:id': { signedOut: json, recentSignIn: json },
  'POST /api/auth/passkeys/step-up/options': { signedOut: json },
  'POST /api/auth/passkeys/step-up/verify': { signedOut: json },
  // passkeys/passkeys-pages.ts
  'POST /dashboard/passkeys/remove': { recentSignIn: json },
  // mfa/mfa.routes.ts
  'GET /api/auth/mfa': { signedOut: json },
  'POST /api/auth/mfa/totp/setup': { signedOut: json, recentSignIn: json },
  'POST /api/auth/mfa/totp/enable': { signedOut: json, recentSignIn: json },
  'POST /api/auth/mfa/totp/disable': { signedOut: json, recentSignIn: json },
  'POST /api/auth/mfa/recovery-codes': { signedOut: json, recentSignIn: json },
  'POST /api/auth/mfa/step-up': { signedOut: json },
  // mfa/mfa-pages.routes.ts (`dashboardUser(…, { recent: true })` showed its error page)
  'POST /dashboard/mfa/totp/setup': { recentSignIn: 'page' },
  'POST /dashboard/mfa/totp/enable': { recentSignIn: 'page' },
  'POST /dashboard/mfa/totp/disable': { recentSignIn: 'page' },
  'POST /dashboard/mfa/recovery-codes': { recentSignIn: 'page' },
  // account-deletion
  'DELETE /api/auth/account': { signedOut: json, recentSignIn: json },
  'POST /dashboard/account/delete': { recentSignIn: json },
  // oauth/oauth.routes.ts
  'POST /api/auth/link/:provider': { signedOut: () => '/dashboard', recentSignIn: json },
  'GET /api/auth/accounts': { signedOut: json },
  'DELETE /api/auth/accounts/:provider': { signedOut: json },
  // password-reset/password.routes.ts
  'POST /api/auth/change-password': { signedOut: json },
  // trusted-devices/trusted-devices.routes.ts (a module added since: declared as a signed-in user's own API)
  'GET /api/auth/trusted-devices': { signedOut: json },
  'DELETE /api/auth/trusted-devices/:id': { signedOut: json },
  'DELETE /api/auth/trusted-devices': { signedOut: json },
  // oidc-provider/oidc.routes.ts
  'POST /oidc/connected-apps/:clientId/disconnect': { signedOut: () => '/dashboard' },
  // organizations/organizations-pages.routes.ts. Not here: `POST /organizations/invitations/accept`
  // and `…/decline`, whose handlers decided by the body (declining with the mailed token needs no
  // session; without a session, accepting went to sign-in coming back to the invitation the body
  // named, else to the dashboard): no decision a hook makes before the body is read.
  'GET /organizations/new': { signedOut: () => '/organizations/new' },
  'POST /organizations': { signedOut: () => '/organizations/new' },
  'POST /organizations/active': { signedOut: () => '/dashboard' },
  'GET /organizations/:id': { signedOut: organizationPage },
  ...Object.fromEntries(
    // …and org-domains' forms on that page (a module added since), declared the same way.
    ['rename', 'delete', 'leave', 'transfer', 'members/role', 'members/remove', 'invitations', 'invitations/revoke', 'domains', 'domains/verify', 'domains/remove'].map((form) => [`POST /organizations/:id/${form}`, { signedOut: organizationPage }]),
  ),
};

// --- the decision -------------------------------------------------------------------------------

function refused(path: RequestPath | null, status: 400 | 401 | 403, code: string): LegacyOutcome {
  return { kind: 'refused', status, code, as: isApiRequestPath(path) || code === 'BAD_REQUEST' ? 'json' : 'page' };
}

const isPageLoad = (method: string) => method === 'GET' || method === 'HEAD';

/** The route guard alone (route-guard.ts): what a path no route serves is still answered. */
export function legacyRouteGuard(request: Pick<LegacyRequest, 'method' | 'url'>, user: LegacyUser): LegacyOutcome {
  const path = readRequestPath(request.url);
  let decision = decidePath(path, null, GATEHOUSE_RULES);
  if (decision.action === 'deny' && decision.reason === 'UNAUTHENTICATED' && user.signedIn) decision = decidePath(path, { roles: user.roles }, GATEHOUSE_RULES);
  if (decision.action === 'allow') return ALLOW;
  const status = decision.reason === 'BAD_REQUEST' ? 400 : decision.reason === 'UNAUTHENTICATED' ? 401 : 403;
  if (isApiRequestPath(path) || decision.reason === 'BAD_REQUEST') return refused(path, status, decision.reason);
  if (decision.reason === 'UNAUTHENTICATED') return { kind: 'redirect', location: signInRedirect(isPageLoad(request.method) ? request.url : undefined) };
  return refused(path, 403, 'FORBIDDEN');
}

/** Both readings under one of `prefixes` (access-policies.ts `isExempt`). */
function isExempt(path: RequestPath | null, prefixes: readonly string[]): boolean {
  return path !== null && prefixes.some((prefix) => isUnder(path.resolved, prefix) && isUnder(path.literal, prefix));
}

/** Either reading under `prefix`. */
function isEitherUnder(path: RequestPath, prefix: string): boolean {
  return isUnder(path.resolved, prefix) || isUnder(path.literal, prefix);
}

/** The policies (access-policies.ts with mfa-policy.ts and the two copies): the first refusal, or null. */
function policyRefusal(method: string, path: RequestPath, user: LegacyUser): { code: string; redirectTo?: string } | null {
  // The MFA policy (MFA_REQUIRED_ROLES).
  if (!isExempt(path, EXEMPT) && user.mfaRequiredRole) {
    if (!user.usedSecondFactor && !user.hasSecondFactor) return { code: 'MFA_ENROLLMENT_REQUIRED', redirectTo: MFA_ENROLMENT_PAGE };
    if (ADMIN_AREA.some((prefix) => isEitherUnder(path, prefix)) && !user.usedSecondFactor) return { code: 'STEP_UP_REQUIRED' };
  }
  // The step-up policies: the same rule over three lists.
  const isSensitive = SENSITIVE.some((rule) => rule.methods.includes(method) && isEitherUnder(path, rule.prefix));
  if (isSensitive && !user.usedSecondFactorRecently && user.hasSecondFactor) return { code: 'REAUTH_REQUIRED' };
  return null;
}

/** The route's parameters by name, read from the path as Fastify would (each segment decoded). */
function paramsOf(route: string, url: string): Record<string, string> {
  const segments = url.replace(/[?#].*$/, '').split('/');
  const params: Record<string, string> = {};
  route.split('/').forEach((part, index) => {
    if (!part.startsWith(':')) return;
    const raw = segments[index] ?? '';
    try {
      params[part.slice(1)] = decodeURIComponent(raw);
    } catch {
      params[part.slice(1)] = raw;
    }
  });
  return params;
}

/**
 * What the old app answered `request` from `user`, as far as access goes: 'allow' when the
 * request reached its handler's own work (whatever that then answered).
 */
export function legacyAccess(request: LegacyRequest, user: LegacyUser): LegacyOutcome {
  const guard = legacyRouteGuard(request, user);
  if (guard.kind !== 'allow') return guard;
  const path = readRequestPath(request.url);
  if (path === null) return refused(path, 400, 'BAD_REQUEST');

  if (user.signedIn) {
    const refusal = policyRefusal(request.method, path, user);
    if (refusal !== null) {
      if (isApiRequestPath(path)) return refused(path, 403, refusal.code);
      if (isPageLoad(request.method) && refusal.redirectTo !== undefined) return { kind: 'redirect', location: refusal.redirectTo };
      // The old policies' page refusal was the route guard's 403 page, whatever the code.
      return refused(path, 403, 'FORBIDDEN');
    }
  }

  const check = request.route === null ? undefined : HANDLERS[`${request.method} ${request.route}`];
  if (check === undefined) return ALLOW;
  if (!user.signedIn) {
    if (check.signedOut === undefined) return ALLOW;
    if (check.signedOut === 'json') return { kind: 'refused', status: 401, code: 'UNAUTHENTICATED', as: 'json' };
    return { kind: 'redirect', location: signInRedirect(check.signedOut(paramsOf(request.route!, request.url))) };
  }
  if (check.recentSignIn !== undefined && !user.signedInRecently) return { kind: 'refused', status: 403, code: 'REAUTH_REQUIRED', as: check.recentSignIn };
  return ALLOW;
}
