/**
 * Who may call a route, declared where the route is registered, in its Fastify `config` (the idiom
 * `skipCsrf` uses):
 *
 *   app.post('/api/auth/change-password', { config: { access: access.user({ requires: [RECENT_SECOND_FACTOR] }) } }, handler)
 *
 * One hook (route-access.ts) reads the declaration, authenticates once, enforces it and puts the
 * result on the request (`signedIn(request)`, `sessionOf(request)`): handlers never authenticate by
 * hand. A route registered without a declaration, or naming a requirement or an exemption no module
 * enforces, stops the start with an error naming its method and path.
 *
 * Requirements (`requires`) are named checks a module enforces (`accessRequirements` in the module
 * contract): the MFA module's `RECENT_SECOND_FACTOR`, say. Exemptions (`exempt`) name the
 * policies (`accessPolicies`) a route is outside of: enrolment itself is reachable while the MFA
 * policy asks a user to enrol (`DURING_ENROLMENT`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestAuth } from '../sessions/request-authentication.ts';

/** Reachable by a user whom the MFA policy (MFA_REQUIRED_ROLES) still asks to enrol a second factor. */
export const DURING_ENROLMENT = 'during-enrolment';
/** A user who has a second factor used it in this session within REAUTH_WINDOW (REAUTH_REQUIRED otherwise). */
export const RECENT_SECOND_FACTOR = 'recent-second-factor';
/** The session began (sign-in) within REAUTH_WINDOW (REAUTH_REQUIRED otherwise). */
export const RECENT_SIGN_IN = 'recent-sign-in';
/**
 * The caller acts in their own name: not an administrator acting as them (impersonation). Named by
 * what only the person may do even without a step-up: let an app act for them, unlink a way in,
 * end their other sessions, make credentials in their name.
 */
export const IN_PERSON = 'in-person';

export interface RouteAccess {
  /** Who may call it: anyone, a signed-in user, or a signed-in holder of `role` (as held now). */
  readonly who: 'anyone' | 'user' | 'role';
  readonly role?: string;
  /** Named requirements the signed-in caller also meets (see `accessRequirements`). */
  readonly requires: readonly string[];
  /** Names of the policies the route is outside of (see `accessPolicies`). */
  readonly exempt: readonly string[];
  /** An `anyone` route that reads the session when there is one (`sessionOf(request)`). */
  readonly readsSession: boolean;
  /** Judge the caller on the roles they hold now, not those a jwt-strategy token carries. */
  readonly currentRoles: boolean;
  /** A page load without a session goes here (303) instead of the sign-in page. */
  readonly signedOutRedirect?: string | ((request: FastifyRequest) => string);
  /** How a page route shows a refusal other than "sign in" (instead of the 403 page). */
  readonly refusalPage?: (request: FastifyRequest, reply: FastifyReply, code: string) => FastifyReply | Promise<FastifyReply>;
}

interface UserOptions {
  readonly requires?: readonly string[];
  readonly exempt?: readonly string[];
  readonly currentRoles?: boolean;
  readonly signedOutRedirect?: RouteAccess['signedOutRedirect'];
  readonly refusalPage?: RouteAccess['refusalPage'];
}

function freeze(value: RouteAccess): RouteAccess {
  return Object.freeze({ ...value, requires: Object.freeze([...value.requires]), exempt: Object.freeze([...value.exempt]) });
}

export const access = {
  /**
   * Anyone, signed in or not. `readsSession`: the handler reads the session when there is one.
   * `requires`: what a caller with a session must also meet (one without is judged by the handler).
   */
  anyone(options: { readonly readsSession?: boolean; readonly exempt?: readonly string[]; readonly requires?: readonly string[] } = {}): RouteAccess {
    const requires = options.requires ?? [];
    return freeze({ who: 'anyone', requires, exempt: options.exempt ?? [], readsSession: (options.readsSession ?? false) || requires.length > 0, currentRoles: false });
  },
  /** A signed-in user (401 UNAUTHENTICATED, or the sign-in page, otherwise). */
  user(options: UserOptions = {}): RouteAccess {
    const requires = options.requires ?? [];
    return freeze({
      who: 'user',
      requires,
      exempt: options.exempt ?? [],
      readsSession: true,
      // A requirement is judged on the user as they are now (their factors, their roles).
      currentRoles: options.currentRoles ?? requires.length > 0,
      signedOutRedirect: options.signedOutRedirect,
      refusalPage: options.refusalPage,
    });
  },
  /** A signed-in holder of `role`, as they hold it now (403 FORBIDDEN, or the 403 page, otherwise). */
  role(role: string, options: Omit<UserOptions, 'currentRoles'> = {}): RouteAccess {
    return freeze({ who: 'role', role, requires: options.requires ?? [], exempt: options.exempt ?? [], readsSession: true, currentRoles: true, signedOutRedirect: options.signedOutRedirect, refusalPage: options.refusalPage });
  },
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (see authorization/access.ts); every route declares it. */
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /** Set by the access hook: the caller, null without a session, undefined where the route reads none. */
    gatehouseAuth: RequestAuth | null | undefined;
  }
}

/** The signed-in caller of a route declared `access.user()` or `access.role()`. */
export function signedIn(request: FastifyRequest): RequestAuth {
  const auth = request.gatehouseAuth;
  if (auth === null || auth === undefined) throw new Error(`${request.method} ${request.routeOptions.url ?? request.url}: signedIn() on a route that does not declare a signed-in caller`);
  return auth;
}

/** The caller of a route that reads the session (`access.anyone({ readsSession: true })` or a signed-in one), or null. */
export function sessionOf(request: FastifyRequest): RequestAuth | null {
  const auth = request.gatehouseAuth;
  if (auth === undefined) throw new Error(`${request.method} ${request.routeOptions.url ?? request.url}: sessionOf() on a route that does not declare readsSession`);
  return auth;
}
