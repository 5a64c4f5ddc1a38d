/**
 * The one place access is decided: a hook before every handler that reads the route's declaration
 * (authorization/access.ts), authenticates once, and enforces, in order:
 *   1. the seed's prefix rules (packages/protect/src/rules.ts, GATEHOUSE_RULES) as a floor, on
 *      both readings of the path, for every request: a path with no route (404) keeps the answers
 *      it has always had, and no declaration can open `/admin` to a non-ADMIN;
 *   2. who the route admits (anyone, a signed-in user, a role as held now);
 *   3. the modules' policies (`accessPolicies`: MFA_REQUIRED_ROLES, say) on every routed request
 *      that carries a session, unless the route names the policy's exemption;
 *   4. the route's named requirements (`accessRequirements`: a recent second factor, say). A name
 *      may be enforced by several modules: each check applies, in the modules' order. A route that
 *      asks for a step-up (RECENT_SECOND_FACTOR, RECENT_SIGN_IN) also asks for IN_PERSON when a
 *      module enforces it: what needs a fresh proof of the person is never done for them by
 *      somebody else (an administrator acting as them) or something else.
 * The caller is left on the request (`signedIn`, `sessionOf`). API paths are refused with JSON
 * (401/403 and the refusal's code); pages go to sign-in, where a refusal says, or to the 403 page.
 *
 * At start, every route must declare its access, and name only requirements and exemptions some
 * module enforces: otherwise the start stops with every such route by method and path.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from '../errors.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import { syncFirstHook } from '../http/sync-first-hook.ts';
import type { AccessPolicy, AccessRefusal, AccessRequirement } from '../module.ts';
import type { RequestAuth, RequestAuthenticator } from '../sessions/request-authentication.ts';
import { ADMIN_ROLE, GATEHOUSE_RULES, decidePath, isApiRequestPath, readRequestPath, type Decision, type ProtectionRules, type RequestPath } from '../../packages/protect/src/rules.ts';
import { access as declare, IN_PERSON, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, type RouteAccess } from './access.ts';

/** One route of the app and what it declares (methods as Fastify registered them). */
export interface DeclaredRoute {
  readonly method: string;
  readonly url: string;
  readonly access: RouteAccess | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far, with its access declaration (for the start-up check, the OpenAPI document and tests). */
    readonly routeAccess: readonly DeclaredRoute[];
  }
}

const NO_ROLES = Object.freeze({ roles: Object.freeze([]) });
const STEP_UPS: ReadonlySet<string> = new Set([RECENT_SECOND_FACTOR, RECENT_SIGN_IN]);
const ANYONE = declare.anyone();
const SIGNED_IN = declare.user();
const ADMIN_ONLY = declare.role(ADMIN_ROLE);

/** What the prefix rules alone ask of a path no route serves (a 404): the floor, as a declaration. */
function floorAccess(path: RequestPath | null, rules: ProtectionRules): RouteAccess {
  if (decidePath(path, null, rules).action === 'allow') return ANYONE;
  return decidePath(path, NO_ROLES, rules).action === 'allow' ? SIGNED_IN : ADMIN_ONLY;
}

export interface RouteAccessOptions {
  readonly authenticate: RequestAuthenticator;
  readonly policies: readonly AccessPolicy[];
  readonly requirements: readonly AccessRequirement[];
  readonly sendForbiddenPage: (reply: FastifyReply) => FastifyReply;
  readonly rules?: ProtectionRules;
}

/**
 * Registers the hook and the route table on `app` (before any route); call the returned check once
 * every route is registered: it throws, naming each route, when one declares nothing or names a
 * requirement or exemption nobody enforces.
 */
export function registerRouteAccess(app: FastifyInstance, options: RouteAccessOptions): { check(): void } {
  const { authenticate, sendForbiddenPage } = options;
  const rules = options.rules ?? GATEHOUSE_RULES;
  const activePolicies = options.policies.filter((policy) => policy.isActive);
  const requirements = new Map<string, AccessRequirement[]>();
  for (const requirement of options.requirements) {
    const enforcers = requirements.get(requirement.name) ?? [];
    if (enforcers.includes(requirement)) throw new Error(`access: the requirement "${requirement.name}" is declared twice by one enforcer`);
    requirements.set(requirement.name, [...enforcers, requirement]);
  }
  /** The checks a route's declaration asks for, in order: its requirements', then IN_PERSON's when it asks for a step-up. */
  const checksOf = new WeakMap<RouteAccess, readonly AccessRequirement[]>();
  function requirementChecks(access: RouteAccess): readonly AccessRequirement[] {
    let found = checksOf.get(access);
    if (found === undefined) {
      const names = [...access.requires];
      if (names.some((name) => STEP_UPS.has(name)) && !names.includes(IN_PERSON) && requirements.has(IN_PERSON)) names.push(IN_PERSON);
      found = names.flatMap((name) => requirements.get(name) ?? []);
      checksOf.set(access, found);
    }
    return found;
  }
  const exemptions = new Set(options.policies.flatMap((policy) => (policy.exemption === undefined ? [] : [policy.exemption])));

  const table: DeclaredRoute[] = [];
  app.decorate('routeAccess', table);
  app.decorateRequest('gatehouseAuth', undefined);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) table.push({ method, url: route.url, access: route.config?.access });
  });

  /** The policies that judge a routed request: the active ones the route is not exempt from. */
  const policiesOf = new WeakMap<RouteAccess, readonly AccessPolicy[]>();
  function applicablePolicies(access: RouteAccess): readonly AccessPolicy[] {
    let found = policiesOf.get(access);
    if (found === undefined) {
      found = activePolicies.filter((policy) => policy.exemption === undefined || !access.exempt.includes(policy.exemption));
      policiesOf.set(access, found);
    }
    return found;
  }

  app.addHook(
    'onRequest',
    syncFirstHook((request, reply) => {
      const path = readRequestPath(request.url);
      const floor = decidePath(path, null, rules);
      const declared = request.routeOptions.config?.access;
      const routed = declared !== undefined;
      const access = declared ?? floorAccess(path, rules);
      const policies = routed ? applicablePolicies(access) : [];
      const needsSession = floor.action === 'deny' || access.who !== 'anyone' || access.readsSession || policies.length > 0;
      if (!needsSession) return undefined;
      return decide(request, reply, path, access, floor, policies);
    }),
  );

  async function decide(request: FastifyRequest, reply: FastifyReply, path: RequestPath | null, access: RouteAccess, anonymous: Decision, policies: readonly AccessPolicy[]) {
    if (anonymous.action === 'deny' && anonymous.reason === 'BAD_REQUEST') throw new AppError('BAD_REQUEST');
    // A decision that grants a role's powers, or a policy's, is made on the roles held now.
    // (A path the rules leave public needs no role: no second reading of it.)
    const floorNeedsRole = anonymous.action === 'deny' && decidePath(path, NO_ROLES, rules).action === 'deny';
    const currentRoles = access.currentRoles || floorNeedsRole || policies.length > 0;
    const auth = currentRoles ? await authenticate.withCurrentRoles(request, reply) : await authenticate(request, reply);
    request.gatehouseAuth = auth;

    const floor = decidePath(path, auth, rules);
    if (floor.action === 'deny') return refuse(request, reply, path, access, { code: floor.reason });
    if (auth === null) {
      if (access.who === 'anyone') return;
      return refuse(request, reply, path, access, { code: 'UNAUTHENTICATED' });
    }
    if (access.who === 'role' && !auth.roles.includes(access.role ?? '')) return refuse(request, reply, path, access, { code: 'FORBIDDEN' });
    for (const policy of policies) {
      const refusal = await policy.check(auth, { access, method: request.method });
      if (refusal !== null) return refuse(request, reply, path, access, refusal);
    }
    for (const requirement of requirementChecks(access)) {
      const refusal = await requirement.check(auth, { access, method: request.method });
      if (refusal !== null) return refuse(request, reply, path, access, refusal);
    }
  }

  function refuse(request: FastifyRequest, reply: FastifyReply, path: RequestPath | null, access: RouteAccess, refusal: AccessRefusal) {
    // A route that names where a signed-out caller goes sends them there, API path or not (the
    // dashboard's "Link a provider" button posts to /api/auth/link/:provider).
    const signedOutTo = refusal.code === 'UNAUTHENTICATED' ? access.signedOutRedirect : undefined;
    if (signedOutTo !== undefined) return reply.redirect(typeof signedOutTo === 'string' ? signedOutTo : signedOutTo(request), 303);
    if (isApiRequestPath(path) || refusal.code === 'BAD_REQUEST') throw new AppError(refusal.code as ErrorCode);
    // Come back to a page, never to a form's target (it answers only POST).
    const isPageLoad = request.method === 'GET' || request.method === 'HEAD';
    if (refusal.code === 'UNAUTHENTICATED') return reply.redirect(signInRedirect(isPageLoad ? request.url : undefined), 303);
    if (isPageLoad && refusal.redirectTo !== undefined) return reply.redirect(refusal.redirectTo, 303);
    // The route's own page, in the visitor's language (its page context negotiates it: the
    // browser routes' language hook has not run yet).
    if (access.refusalPage !== undefined) return access.refusalPage(request, reply, refusal.code);
    return sendForbiddenPage(reply);
  }

  return {
    check() {
      const problems: string[] = [];
      for (const route of table) {
        // Fastify's own HEAD twin of a GET route carries the GET's declaration.
        if (route.method === 'HEAD') continue;
        const where = `${route.method} ${route.url}`;
        if (route.access === undefined) {
          problems.push(`${where} declares no access (config.access: access.anyone(), access.user() or access.role())`);
          continue;
        }
        for (const name of route.access.requires) if (!requirements.has(name)) problems.push(`${where} requires "${name}", which no module enforces`);
        for (const name of route.access.exempt) if (!exemptions.has(name)) problems.push(`${where} is exempt from "${name}", which no module's policy names`);
      }
      if (problems.length > 0) throw new Error(`routes: ${problems.length} route(s) with a missing or unknown access declaration:\n  ${problems.join('\n  ')}`);
    },
  };
}

export type { RequestAuth };
