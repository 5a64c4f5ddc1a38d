/** The page a signed-in person sees for a page their roles do not open (the access hook's 403, authorization/route-access.ts). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createPageRenderer, ENGLISH_PAGE, sendPage, type PageLanguage } from './render.ts';

export const FORBIDDEN_CODE = 'FORBIDDEN';

/**
 * `languageOf`: the language of a request answered before the browser routes' own hooks gave it
 * one (the access hook runs first); without it such a page is English.
 */
export function createForbiddenPage(languageOf?: (request: FastifyRequest) => PageLanguage): (reply: FastifyReply) => FastifyReply {
  const pages = createPageRenderer([]);
  const render = (i18n: PageLanguage) =>
    pages.render('error', { i18n, title: i18n.t('web.forbidden.heading'), code: FORBIDDEN_CODE, heading: i18n.t('web.forbidden.heading'), message: i18n.t('web.forbidden.message') });
  // Outside the browser routes (no page language): English, made once.
  const english = render(ENGLISH_PAGE);
  return (reply) => {
    const language = (reply.request as { language?: PageLanguage | null }).language ?? languageOf?.(reply.request);
    if (language === undefined) return sendPage(reply, english, 403);
    void reply.header('content-language', language.locale);
    return sendPage(reply, render(language), 403);
  };
}
