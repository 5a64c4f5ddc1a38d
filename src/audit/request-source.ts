import type { FastifyRequest } from 'fastify';
import type { AuditSource } from './audit.service.ts';
import { langParameter, LOCALE_COOKIE, negotiateLocale } from '../i18n/negotiate.ts';
import type { Locale } from '../i18n/locales.ts';

/** The audit source of an HTTP request: who is acting (null before sign-in), their client, its language and a reader of its cookies. */
export function requestSource(request: FastifyRequest, actorUserId: string | null): AuditSource {
  const locale = requestLocale(request);
  const cookie = (name: string): string | undefined => request.cookies?.[name];
  return { actorUserId, ip: request.ip, userAgent: request.headers['user-agent'] ?? null, ...(locale !== undefined && { locale }), cookie };
}

/**
 * The request's language, negotiated as a page's is (`?lang=`, the language cookie, then
 * Accept-Language; no I/O), when the request states one we have. Undefined for a client that states
 * none (a server calling the API sends no header, or Node's fetch `*`) or only languages we do not
 * have: nothing is stored for a person on the word of a client that never said.
 */
export function requestLocale(request: FastifyRequest): Locale | undefined {
  // From the URL as sent: a route's querystring schema may have dropped `lang` from `request.query`.
  const { locale, source } = negotiateLocale({ query: langParameter(request.url), cookie: request.cookies?.[LOCALE_COOKIE], acceptLanguage: request.headers['accept-language'] });
  return source === 'default' ? undefined : locale;
}
