/**
 * Browser cookies: the access token, the refresh token, and the CSRF secret. On https they get
 * `Secure` and the `__Host-` prefix, which pins them to this exact origin (no Domain, Path=/), so
 * a sibling subdomain cannot set or shadow them. All are HttpOnly and SameSite=Lax.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import type { SessionService, StartedSession } from './session.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { baseCookieOptions } from '../http/cookies.ts';
import { cookieNames as sharedCookieNames, type CookieNames as SharedCookieNames } from '../../packages/protect/src/contract.ts';

export interface CookieNames extends SharedCookieNames {
  /** An OAuth authorization in progress (see `oauth/oauth-flow-cookie.ts`). */
  oauthFlow: string;
}

type CookieConfig = Pick<Config, 'isSecureOrigin'>;

/** The names `gatehouse-protect` also knows (packages/protect/src/contract.ts), and the service's own. */
export function cookieNames(config: CookieConfig): CookieNames {
  const shared = sharedCookieNames(config.isSecureOrigin);
  return { ...shared, oauthFlow: `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.oauth` };
}

export { baseCookieOptions };

/** Sets the access and refresh cookies of a new or refreshed session. */
export function setSessionCookies(
  reply: FastifyReply,
  config: CookieConfig,
  session: { accessToken: string; accessTokenExpiresAt: number; refreshToken: string; sessionExpiresAt: number },
  nowMs: number,
): void {
  const names = cookieNames(config);
  const options = baseCookieOptions(config);
  void reply.setCookie(names.access, session.accessToken, { ...options, maxAge: secondsUntil(session.accessTokenExpiresAt, nowMs) });
  void reply.setCookie(names.refresh, session.refreshToken, { ...options, maxAge: secondsUntil(session.sessionExpiresAt, nowMs) });
}

/** Replaces the access cookie alone (a step-up's new token); the refresh cookie stays. */
export function setAccessCookie(reply: FastifyReply, config: CookieConfig, access: { accessToken: string; accessTokenExpiresAt: number }, nowMs: number): void {
  void reply.setCookie(cookieNames(config).access, access.accessToken, { ...baseCookieOptions(config), maxAge: secondsUntil(access.accessTokenExpiresAt, nowMs) });
}

export function clearSessionCookies(reply: FastifyReply, config: CookieConfig): void {
  const names = cookieNames(config);
  const options = baseCookieOptions(config);
  void reply.clearCookie(names.access, options);
  void reply.clearCookie(names.refresh, options);
}

function secondsUntil(epochMs: number, nowMs: number): number {
  return Math.max(0, Math.floor((epochMs - nowMs) / 1000));
}

/**
 * Gives a browser the cookies of a session it has just signed in to (password or provider). A
 * session this browser already had is ended rather than orphaned: signing in again replaces it.
 * The CSRF secret is replaced with the session, so no token from before the sign-in (one an
 * attacker obtained or planted in this browser) is accepted with the new session.
 */
export async function setBrowserSession(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: { sessions: SessionService; csrf: { rotateSecret(request: FastifyRequest, reply: FastifyReply): void }; config: CookieConfig; nowMs: number },
  signedIn: { userId: string; session: StartedSession },
): Promise<void> {
  const previousRefreshCookie = request.cookies[cookieNames(deps.config).refresh];
  if (previousRefreshCookie !== undefined) await deps.sessions.endSessionOfRefreshToken(previousRefreshCookie, requestSource(request, signedIn.userId));
  setSessionCookies(reply, deps.config, signedIn.session, deps.nowMs);
  deps.csrf.rotateSecret(request, reply);
}
