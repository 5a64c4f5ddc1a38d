/**
 * Who is making a request: a Bearer credential if the request has an Authorization header (and
 * then nothing else), otherwise the browser's session cookie. A Bearer token goes to the first of
 * the modules' credential resolvers that recognises it (an access token: `accessTokenResolver`,
 * the sessions module's); none, or a refusal, leaves the request unauthenticated. A browser whose
 * access cookie has expired but whose refresh cookie is good is refreshed transparently: new
 * cookies are set on this response. The answer is computed once per request.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import type { CredentialResolver } from '../module.ts';
import type { AuthContext, SessionService } from './session.service.ts';
import { clearSessionCookies, cookieNames, setSessionCookies } from './session-cookie.ts';
import { readBearerToken } from '../../packages/protect/src/contract.ts';

export interface RequestAuth extends AuthContext {
  /** How the credentials came: a browser cookie (CSRF rules apply) or a Bearer header. */
  via: 'cookie' | 'bearer';
}

export interface RequestAuthenticator {
  (request: FastifyRequest, reply: FastifyReply): Promise<RequestAuth | null>;
  /**
   * The same, with the roles the user holds now rather than those a jwt-strategy token was issued
   * with: for every decision that grants a role's powers (a demoted ADMIN's token must not reach
   * the admin area, nor undo the demotion). Computed once per request.
   */
  withCurrentRoles(request: FastifyRequest, reply: FastifyReply): Promise<RequestAuth | null>;
}

// Read exactly as gatehouse-protect reads it (packages/protect/src/contract.ts).
export { readBearerToken } from '../../packages/protect/src/contract.ts';

/**
 * A Gatehouse access token (a JWT: its header, base64url JSON, begins `eyJ`), checked by the
 * session strategy. The sessions module's resolver.
 */
export function accessTokenResolver(sessions: Pick<SessionService, 'authenticate' | 'withCurrentRoles'>): CredentialResolver {
  return { name: 'access-token', recognises: (token) => token.startsWith('eyJ'), resolve: sessions.authenticate, withCurrentRoles: sessions.withCurrentRoles };
}

/** The first of `resolvers` (every module's, in list order) to recognise a Bearer token, if any; refuses two of one name. */
export function credentialResolverFor(resolvers: readonly CredentialResolver[]): (token: string) => CredentialResolver | undefined {
  const names = new Set<string>();
  for (const resolver of resolvers) {
    if (names.has(resolver.name)) throw new Error(`modules: two credential resolvers are named "${resolver.name}"`);
    names.add(resolver.name);
  }
  const list = [...resolvers];
  return (token) => {
    // Synchronous and without allocation: this runs on every Bearer request.
    for (let index = 0; index < list.length; index++) if (list[index]!.recognises(token)) return list[index];
    return undefined;
  };
}

export function createRequestAuthenticator(deps: { sessions: SessionService; config: Config; clock: Clock; resolvers: readonly CredentialResolver[] }): RequestAuthenticator {
  const { sessions, config, clock } = deps;
  const names = cookieNames(config);
  const resolverFor = credentialResolverFor(deps.resolvers);
  const resolved = new WeakMap<FastifyRequest, Promise<RequestAuth | null>>();
  /** The resolver that answered a Bearer request: it says what the caller's roles are now. */
  const answeredBy = new WeakMap<FastifyRequest, CredentialResolver>();

  async function resolve(request: FastifyRequest, reply: FastifyReply): Promise<RequestAuth | null> {
    const bearer = readBearerToken(request.headers.authorization);
    if (bearer !== undefined) {
      // An explicit credential that no resolver recognises, or that fails, never falls back to a cookie.
      const resolver = bearer === null ? undefined : resolverFor(bearer);
      const auth = resolver === undefined ? null : await resolver.resolve(bearer!);
      if (auth === null) return null;
      answeredBy.set(request, resolver!);
      return { ...auth, via: 'bearer' };
    }

    const accessCookie = request.cookies[names.access];
    if (accessCookie !== undefined) {
      const auth = await sessions.authenticate(accessCookie);
      if (auth !== null) return { ...auth, via: 'cookie' };
    }
    const refreshCookie = request.cookies[names.refresh];
    if (refreshCookie === undefined) return null;
    const refreshed = await sessions.refresh(refreshCookie, { ip: request.ip, userAgent: request.headers['user-agent'] ?? null });
    if (!refreshed.ok) {
      clearSessionCookies(reply, config);
      return null;
    }
    setSessionCookies(reply, config, refreshed.session, clock());
    const auth = await sessions.authenticate(refreshed.session.accessToken);
    return auth && { ...auth, via: 'cookie' };
  }

  const authenticate = (request: FastifyRequest, reply: FastifyReply): Promise<RequestAuth | null> => {
    let pending = resolved.get(request);
    if (pending === undefined) {
      pending = resolve(request, reply);
      resolved.set(request, pending);
    }
    return pending;
  };
  const confirmed = new WeakMap<FastifyRequest, Promise<RequestAuth | null>>();
  return Object.assign(authenticate, {
    withCurrentRoles(request: FastifyRequest, reply: FastifyReply): Promise<RequestAuth | null> {
      let pending = confirmed.get(request);
      if (pending === undefined) {
        pending = authenticate(request, reply).then(async (auth) => {
          if (auth === null) return null;
          if (auth.via === 'cookie') return sessions.withCurrentRoles(auth);
          const resolver = answeredBy.get(request)!;
          if (resolver.withCurrentRoles === undefined) return auth;
          const current = await resolver.withCurrentRoles(auth);
          return current && { ...current, via: auth.via };
        });
        confirmed.set(request, pending);
      }
      return pending;
    },
  });
}
