/** The hosted pages that belong to no single feature yet (home, sign-in, sign-out, error, dashboard) and their stylesheet. */
import { defineModule } from '../module.ts';
import { uiRoutes } from './ui.routes.ts';
import { assetRoutes } from './asset.routes.ts';

export const pagesModule = defineModule({
  name: 'pages',
  routes: [
    {
      scope: 'browser',
      register: (app, { services, authenticate, csrf, config }) => app.register(uiRoutes, { sessions: services.sessions, oauth: services.oauth, authenticate, csrf, config }),
    },
    { scope: 'api', register: (app) => app.register(assetRoutes) },
  ],
});
