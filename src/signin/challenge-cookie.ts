/**
 * A browser whose sign-in was answered with a challenge (a second factor) is sent to the page that
 * answers it, with the challenge's token in a cookie of its own: HttpOnly, SameSite=Lax, on https
 * `__Host-` and Secure, living as long as the challenge. Tokens never go in URLs (logs, Referer,
 * history). The page's form posts it back with the cookie; the cookie is cleared once used.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { baseCookieOptions } from '../http/cookies.ts';
import type { SignInChallenge } from './signin-pipeline.ts';

type CookieConfig = Pick<Config, 'isSecureOrigin'>;

export function challengeCookieName(config: CookieConfig): string {
  return `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.challenge`;
}

/** Sends the browser to answer `challenge`, then to `callbackUrl`; false when the challenge has no browser page. */
export function redirectToChallenge(reply: FastifyReply, challenge: SignInChallenge, callbackUrl: string, config: CookieConfig): boolean {
  if (challenge.browser === undefined) return false;
  const { page, token, ttlSeconds } = challenge.browser;
  void reply.setCookie(challengeCookieName(config), token, { ...baseCookieOptions(config), maxAge: ttlSeconds });
  void reply.redirect(`${page}?${new URLSearchParams({ callbackUrl })}`, 303);
  return true;
}

export function readChallengeCookie(request: FastifyRequest, config: CookieConfig): string | undefined {
  return request.cookies[challengeCookieName(config)];
}

export function clearChallengeCookie(reply: FastifyReply, config: CookieConfig): void {
  void reply.clearCookie(challengeCookieName(config), baseCookieOptions(config));
}
