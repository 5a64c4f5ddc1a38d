/** The page a signed-in person sees for a page their roles do not open (the access hook's 403, authorization/route-access.ts). */
import type { FastifyReply } from 'fastify';
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
