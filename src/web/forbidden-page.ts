/** The page a signed-in person sees for a page their roles do not open (the route guard's 403). */
import type { FastifyReply } from 'fastify';
import { createPageRenderer, ENGLISH_PAGE, sendPage, type PageLanguage } from './render.ts';

export const FORBIDDEN_CODE = 'FORBIDDEN';

export function createForbiddenPage(): (reply: FastifyReply) => FastifyReply {
  const pages = createPageRenderer([]);
  const render = (i18n: PageLanguage) =>
    pages.render('error', { i18n, title: i18n.t('web.forbidden.heading'), code: FORBIDDEN_CODE, heading: i18n.t('web.forbidden.heading'), message: i18n.t('web.forbidden.message') });
  // Outside the browser routes (no page language): English, made once.
  const english = render(ENGLISH_PAGE);
  return (reply) => {
    const language = (reply.request as { language?: PageLanguage | null }).language;
    return sendPage(reply, language ? render(language) : english, 403);
  };
}
