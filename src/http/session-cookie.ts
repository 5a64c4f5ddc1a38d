/**
 * The browser session cookie. On https it gets `Secure` and the `__Host-` prefix, which pins it
 * to this exact origin (no Domain, Path=/), so a sibling subdomain cannot set or shadow it.
 */
import type { FastifyReply } from 'fastify';
import type { Config } from '../config.ts';

const BASE_NAME = 'gatehouse.session';

export function sessionCookieName(config: Pick<Config, 'isSecureOrigin'>): string {
  return config.isSecureOrigin ? `__Host-${BASE_NAME}` : BASE_NAME;
}

export function setSessionCookie(reply: FastifyReply, config: Pick<Config, 'isSecureOrigin'>, token: string, expiresAtMs: number, nowMs: number): void {
  void reply.setCookie(sessionCookieName(config), token, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: config.isSecureOrigin,
    maxAge: Math.max(0, Math.floor((expiresAtMs - nowMs) / 1000)),
  });
}
