/**
 * The hosted pages that no single feature owns, and the pages' stylesheet. Home is nobody's; the
 * sign-in page gathers the password form (credentials), a button per provider (oauth) and what
 * other modules put on it (their sections and links: sign-up, a forgotten password); `/auth/error`
 * explains the codes of every way in; the dashboard shows sessions, linked providers and the
 * change-password form (password-reset) together. So they stay one module,
 * last in the list, using the services of the modules above it; pages that belong to one feature
 * live in that feature's folder (admin/, password-reset/, verification/), and what every page
 * shares (renderer, layout, stylesheet) is in web/.
 */
import { join } from 'node:path';
import { defineModule } from '../module.ts';
import { readMessages } from '../i18n/catalog.ts';
import { assetRoutes } from '../web/asset.routes.ts';
import { pageRoutes } from './pages.routes.ts';

export const pagesModule = defineModule({
  name: 'pages',
  // Home, sign-in, sign-out, the error page and the dashboard in every language.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  routes: [
    {
      scope: 'browser',
      register: (app, { services, config, clock, pageSections, pageLinks, askingApp }) =>
        app.register(pageRoutes, {
          clock,
          sessions: services.sessions,
          places: services.places,
          oauth: services.oauth,
          config,
          sections: pageSections('dashboard'),
          signInSections: pageSections('signin'),
          links: pageLinks,
          askingApp,
        }),
    },
    { scope: 'api', register: (app) => app.register(assetRoutes) },
  ],
});
