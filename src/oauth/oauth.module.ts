/** Sign-in with GitHub, Google and a generic OpenID Connect provider (a first factor), and linking. */
import { defineModule } from '../module.ts';
import { createOAuthService, type OAuthService } from './oauth.service.ts';
import { oauthRoutes } from './oauth.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    oauth: OAuthService;
  }
}

export const oauthModule = defineModule({
  name: 'oauth',
  provide: ({ db, config, clock, logger, services }) => ({
    oauth: createOAuthService({
      db,
      providers: config.oauth.providers,
      authUrl: config.authUrl,
      authSecret: config.authSecret,
      users: services.users,
      sessions: services.sessions,
      audit: services.audit,
      clock,
      logger,
      allowSignup: config.accounts.allowSignup,
      pipeline: services.signInPipeline,
    }),
  }),
  routes: [
    {
      scope: 'browser',
      register: (app, { services, csrf, authenticate, config, clock }) =>
        app.register(oauthRoutes, { oauth: services.oauth, sessions: services.sessions, csrf, authenticate, config, clock, limits: services.limits }),
    },
  ],
});
