/**
 * The browser-binding cookie a start sets: the request's id and a 256-bit secret whose SHA-256 the
 * request stores. It binds the request to the browser that asked: the code page's form names its
 * request by it (the code is never typed for another browser's request), and, under
 * EMAIL_SIGNIN_SAME_BROWSER, a link signs in only where it is. HttpOnly, SameSite=Lax (a form post
 * from our own page carries it), `__Host-` and Secure on https; it lives as long as the request.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { baseCookieOptions } from '../http/cookies.ts';

type CookieConfig = Pick<Config, 'isSecureOrigin'>;

export interface BrowserBinding {
  requestId: string;
  secret: string;
}

const BASE64URL = /^[\w-]{1,128}$/;

export function browserBindingCookieName(config: CookieConfig): string {
  return `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.email-signin`;
}

export function setBrowserBinding(reply: FastifyReply, config: CookieConfig, binding: BrowserBinding, ttlSeconds: number): void {
  void reply.setCookie(browserBindingCookieName(config), `${binding.requestId}.${binding.secret}`, { ...baseCookieOptions(config), maxAge: ttlSeconds });
}

/** The binding this browser carries, or null (none, or not of our making). */
export function readBrowserBinding(request: FastifyRequest, config: CookieConfig): BrowserBinding | null {
  const [requestId, secret, ...rest] = (request.cookies[browserBindingCookieName(config)] ?? '').split('.');
  if (rest.length > 0 || requestId === undefined || secret === undefined || !BASE64URL.test(requestId) || !BASE64URL.test(secret)) return null;
  return { requestId, secret };
}

export function clearBrowserBinding(reply: FastifyReply, config: CookieConfig): void {
  void reply.clearCookie(browserBindingCookieName(config), baseCookieOptions(config));
}
