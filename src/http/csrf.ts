/**
 * CSRF protection. A request needs it when it is unsafe (not GET/HEAD/OPTIONS) and either carries
 * our session cookies without a Bearer token, or is a form / text/plain post (which browsers send
 * cross-site without a preflight; sign-in included, against login CSRF). Such a request must
 *  1. come from our origin: `Origin`, else `Sec-Fetch-Site`, must say so when the browser sends
 *     them (every current browser does on unsafe requests); and
 *  2. carry a token (`csrfToken` form field or `X-CSRF-Token` header) made by @fastify/csrf from
 *     the per-browser secret in our signed, HttpOnly CSRF cookie.
 * JSON requests authenticated by a Bearer token need neither: a cross-site page cannot add that
 * header without a CORS preflight, which we do not grant.
 * The secret is replaced whenever the browser signs in (`rotateSecret`), like the session: a token
 * obtained before sign-in (or planted, with its cookie, by someone who shared the browser or
 * could set cookies for it) is worthless afterwards.
 */
import csrfTokens from '@fastify/csrf';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { baseCookieOptions, cookieNames } from './cookies.ts';
import { mediaType } from './forms.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route protects itself against forgery (the OpenID Provider's endpoints): no check here. */
    skipCsrf?: boolean;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

export interface Csrf {
  /** A token for this browser, creating its secret cookie if needed. */
  issueToken(request: FastifyRequest, reply: FastifyReply): string;
}

export interface CsrfRotation {
  /**
   * Gives this browser a new secret (call when a new session starts): tokens made from the old
   * one stop verifying; tokens issued later in this request and on later pages use the new one.
   */
  rotateSecret(request: FastifyRequest, reply: FastifyReply): void;
}

export function registerCsrfProtection(app: FastifyInstance, config: Config): Csrf & CsrfRotation {
  const tokens = csrfTokens({ secretLength: 32, saltLength: 16 });
  const names = cookieNames(config.isSecureOrigin);
  const expectedOrigin = new URL(config.authUrl).origin;
  const pending = new WeakSet<FastifyRequest>();
  /** Secrets set by `rotateSecret` in this request's response, which its cookie header predates. */
  const rotated = new WeakMap<FastifyRequest, string>();

  function readSecret(request: FastifyRequest): string | null {
    const raw = request.cookies[names.csrf];
    if (raw === undefined) return null;
    const unsigned = request.unsignCookie(raw);
    return unsigned.valid && unsigned.value !== null && unsigned.value.length > 0 ? unsigned.value : null;
  }

  function needsProtection(request: FastifyRequest): boolean {
    if (SAFE_METHODS.has(request.method)) return false;
    // Routes that protect themselves: the OpenID Provider's (its forms carry their own
    // anti-forgery value; its token endpoints authenticate clients, which post cross-site).
    if (request.routeOptions.config?.skipCsrf === true) return false;
    if (FORM_TYPES.has(mediaType(request))) return true;
    const hasSessionCookie = request.cookies[names.access] !== undefined || request.cookies[names.refresh] !== undefined;
    const hasBearer = /^bearer\s/i.test(request.headers.authorization ?? '');
    return hasSessionCookie && !hasBearer;
  }

  function isSameOrigin(request: FastifyRequest): boolean {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== 'null') return origin === expectedOrigin;
    // `Origin: null` comes from our own pages under `Referrer-Policy: no-referrer` (the reset page)
    // and from sandboxed frames anywhere: Sec-Fetch-Site tells them apart.
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined) return site === 'same-origin' || site === 'none';
    if (origin === 'null') return false;
    // Neither header: not a browser that a third-party page could drive. The token still decides.
    return true;
  }

  app.addHook('onRequest', (request, _reply, done) => {
    if (!needsProtection(request)) return done();
    if (!isSameOrigin(request)) return done(new AppError('CSRF_FAILED'));
    pending.add(request);
    done();
  });

  // After parsing, so a token in a form body can be read. A callback hook: it runs on every
  // request, does no I/O, and an async one would cost a promise each time.
  app.addHook('preValidation', (request, _reply, done) => {
    if (!pending.has(request)) return done();
    const body = request.body as Record<string, unknown> | undefined;
    const fromBody = body !== null && typeof body === 'object' ? body.csrfToken : undefined;
    const token = typeof fromBody === 'string' ? fromBody : request.headers['x-csrf-token'];
    const secret = readSecret(request);
    const isValid = secret !== null && typeof token === 'string' && token.length <= 200 && tokens.verify(secret, token);
    done(isValid ? undefined : new AppError('CSRF_FAILED'));
  });

  function setSecret(request: FastifyRequest, reply: FastifyReply): string {
    const secret = tokens.secretSync();
    rotated.set(request, secret);
    // A browser-session cookie: it lives as long as the tab's forms may need it.
    void reply.setCookie(names.csrf, secret, { ...baseCookieOptions(config), signed: true });
    return secret;
  }

  return {
    issueToken(request, reply) {
      const existing = rotated.get(request) ?? readSecret(request);
      return tokens.create(existing ?? setSecret(request, reply));
    },
    rotateSecret(request, reply) {
      setSecret(request, reply);
    },
  };
}
