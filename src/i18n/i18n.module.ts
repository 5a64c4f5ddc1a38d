/**
 * Languages of the hosted pages (and, as modules move their texts to catalogs, of the mails):
 * English, German, French, Spanish, Brazilian Portuguese and Japanese. Every module's catalogs
 * (`messages` in the module contract) are merged, each language read when first used (checked by
 * the i18n test, catalog.ts `checkCatalogs`, not at every start); each browser
 * request gets its language (`request.language`: `?lang=`, remembered in a cookie, else the
 * browser's Accept-Language, else English) and pages render with it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defineModule } from '../module.ts';
import { WEB_MESSAGES, type PageLanguage } from '../web/render.ts';
import { DEFAULT_BRAND, type Brand } from '../web/brand.ts';
import { mergeCatalogs } from './catalog.ts';
import { LOCALE_INFO, LOCALES, type Locale } from './locales.ts';
import { isOwnNavigation, langParameter, LOCALE_COOKIE, negotiateLocale } from './negotiate.ts';
import { createTranslations, type Translations } from './translator.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    translations: Translations;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The language this browser request is answered in (browser routes only; i18n module). */
    language: PageLanguage;
  }
}

/** A chosen language is remembered for a year. */
const COOKIE_MAX_AGE_SECONDS = 365 * 86_400;

/**
 * Parameters a switcher link drops: what a form just did or what went wrong is said once, and a
 * mailed link's token is never copied into more of the page (switching language on a reset or
 * verification page means opening the mailed link again; the choice is remembered by then).
 */
const DROPPED_PARAMETERS = ['error', 'notice', 'reason', 'token'];

/**
 * `url` with `lang` set to `locale`, for the switcher's links: the page's other parameters (a
 * `callbackUrl`, say) are kept, those above are not.
 */
export function withLanguage(url: string, locale: Locale): string {
  const queryAt = url.indexOf('?');
  const requested = queryAt === -1 ? url : url.slice(0, queryAt);
  // Only a path of ours: never `//host` or `/\host`, which a browser would take for another origin.
  const path = requested.startsWith('/') && !requested.startsWith('//') && !requested.startsWith('/\\') ? requested : '/';
  const query = new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1));
  for (const name of DROPPED_PARAMETERS) query.delete(name);
  query.set('lang', locale);
  return `${path}?${query.toString()}`;
}

function pageLanguage(translations: Translations, locale: Locale, request: FastifyRequest, brand: Brand = DEFAULT_BRAND): PageLanguage {
  const translator = translations.translator(locale);
  let links: PageLanguage['links'] | undefined;
  return {
    ...translator,
    // On the browser routes the branding module's hook, after this one, puts the deployment's brand here.
    brand,
    // Made when a page shows them, not for every request.
    get links() {
      return (links ??= LOCALES.map((other) => ({ locale: other, name: LOCALE_INFO[other].name, href: withLanguage(request.url, other), isCurrent: other === locale })));
    },
  };
}

/**
 * The language of a browser request answered before the browser routes' hooks run (the route
 * guard's 403 page, a 404 page): negotiated as theirs is, from the request alone, with the same
 * switcher in the footer for a page load (its links load the same address in another language; a
 * refused form post has no page there to show again), and a choice made with it remembered as the
 * language hook remembers one.
 */
export function requestPageLanguage(
  translations: Translations,
  brand: Brand,
  options: { isSecureOrigin: boolean },
): (request: FastifyRequest, reply: FastifyReply) => PageLanguage {
  return (request, reply) => {
    const { locale, isChosen } = negotiateLocale({ query: langParameter(request.url), cookie: request.cookies?.[LOCALE_COOKIE], acceptLanguage: request.headers['accept-language'] });
    if (isChosen && isOwnNavigation(request.headers)) rememberLocale(reply, locale, options.isSecureOrigin);
    if (request.method !== 'GET' && request.method !== 'HEAD') return { ...translations.translator(locale), links: [], brand };
    return pageLanguage(translations, locale, request, brand);
  };
}

/** The language chosen with `?lang=`, in a cookie for a year. */
function rememberLocale(reply: FastifyReply, locale: Locale, isSecureOrigin: boolean): void {
  void reply.setCookie(LOCALE_COOKIE, locale, { path: '/', maxAge: COOKIE_MAX_AGE_SECONDS, sameSite: 'lax', secure: isSecureOrigin, httpOnly: true });
}

export const i18nModule = defineModule({
  name: 'i18n',
  provide: ({ modules }) => ({
    translations: createTranslations(
      mergeCatalogs([{ name: 'web', messages: WEB_MESSAGES }, ...modules.flatMap((module) => (module.messages === undefined ? [] : [{ name: module.name, messages: module.messages }]))]),
    ),
  }),
  routes: [
    {
      scope: 'browser',
      register: async (app, { services, config }) => {
        app.decorateRequest('language', null as unknown as PageLanguage);
        // A callback hook: it runs on every browser request and does no I/O.
        app.addHook('onRequest', (request, reply, done) => {
          const { lang } = (request.query ?? {}) as { lang?: unknown };
          const { locale, isChosen } = negotiateLocale({ query: lang, cookie: request.cookies[LOCALE_COOKIE], acceptLanguage: request.headers['accept-language'] });
          // A ?lang= from another site answers in that language but is not remembered.
          if (isChosen && isOwnNavigation(request.headers)) rememberLocale(reply, locale, config.isSecureOrigin);
          void reply.header('content-language', locale);
          request.language = pageLanguage(services.translations, locale, request);
          done();
        });
      },
    },
  ],
});
