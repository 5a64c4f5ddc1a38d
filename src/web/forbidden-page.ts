/**
 * The pages a browser sees for a refusal no feature answers: the access hook's 403 (a page the
 * person's roles do not open, authorization/route-access.ts), and a 404 or 405 for an address no
 * route serves, or a method it does not (http/error-handler.ts). API callers keep the JSON error.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createPageRenderer } from './render.ts';

export const FORBIDDEN_CODE = 'FORBIDDEN';

/**
 * In the request's page language: a refusal answered before the browser routes' language hook
 * negotiates its own (web/page-context.ts).
 */
export function createForbiddenPage(): (reply: FastifyReply) => FastifyReply {
  const pages = createPageRenderer([]);
  return (reply) => {
    const { i18n } = reply.page;
    const heading = i18n.t('web.forbidden.heading');
    return pages.send(reply, 'error', { title: heading, code: FORBIDDEN_CODE, heading, message: i18n.t('web.forbidden.message') }, { status: 403 });
  };
}

/**
 * Whether a request is a browser asking for a page: a GET or HEAD whose Accept prefers HTML (a
 * navigation sends `text/html` first), outside the JSON API. `Accept: application/json`, an API
 * path or no Accept header at all keeps the JSON error.
 */
export function wantsPage(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const path = request.url.split('?')[0]!.toLowerCase();
  if (path === '/api' || path.startsWith('/api/')) return false;
  const accept = request.headers.accept ?? '';
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html >= 0 && (json < 0 || html < json);
}

/** The branded page for a 404 (no page at this address) or a 405 (not this method), with its code. */
export function createStatusPage(): (reply: FastifyReply, status: 404 | 405) => FastifyReply {
  const pages = createPageRenderer([]);
  return (reply, status) => {
    const { i18n } = reply.page;
    const key = status === 404 ? 'notFound' : 'methodNotAllowed';
    const heading = i18n.t(`web.${key}.heading`);
    return pages.send(reply, 'error', { title: heading, code: status === 404 ? 'NOT_FOUND' : 'METHOD_NOT_ALLOWED', heading, message: i18n.t(`web.${key}.message`) }, { status });
  };
}
