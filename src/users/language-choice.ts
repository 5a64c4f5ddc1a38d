/**
 * A language the signed-in user chooses on a page (`?lang=`: the language switcher's links)
 * becomes the language of their mails too. Only an explicit choice writes: an ordinary request,
 * or one whose language comes from the cookie or Accept-Language, costs nothing here. The hook
 * runs on the browser routes after the route guard; `authenticate` answers once per request, so
 * a page that knows its user anyway pays no second lookup.
 */
import type { FastifyInstance } from 'fastify';
import type { RequestAuthenticator } from '../sessions/request-authentication.ts';
import { toLocale } from '../i18n/locales.ts';
import { isOwnNavigation, langParameter } from '../i18n/negotiate.ts';
import type { UserService } from './user.service.ts';

export function registerLanguageChoice(app: FastifyInstance, deps: { authenticate: RequestAuthenticator; users: Pick<UserService, 'setLocale'> }): void {
  const { authenticate, users } = deps;
  // Not onResponse: authenticating may refresh the session, whose new cookies must go out with
  // this response.
  app.addHook('preHandler', async function storeChosenLanguage(request, reply) {
    if (request.method !== 'GET') return;
    // From the URL as sent: a route's querystring schema has dropped `lang` from `request.query` by now.
    const locale = toLocale(langParameter(request.url));
    if (locale === null) return;
    // Nothing but the person's own navigation may change the language their mails (security
    // notices among them) are in: the switcher on our page, an address typed or bookmarked. Not a
    // link or an image on another site, a sibling subdomain's included.
    if (!isOwnNavigation(request.headers)) return;
    try {
      const auth = await authenticate(request, reply);
      // Written only when it differs from the stored one (one conditional UPDATE).
      if (auth !== null) await users.setLocale(auth.userId, locale);
    } catch (error) {
      // The page still answers in the chosen language; its own checks meet the same failure.
      request.log.warn({ err: error }, 'the chosen language could not be stored');
    }
  });
}
