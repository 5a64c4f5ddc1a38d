/** Operations: the health endpoint, and housekeeping of ended sessions, tokens and counters. */
import { defineModule } from '../module.ts';
import { createHousekeepingJob } from './housekeeping.ts';
import { healthRoutes } from './health.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    housekeeping: ReturnType<typeof createHousekeepingJob>;
  }
}

export const opsModule = defineModule({
  name: 'ops',
  provide: ({ db, clock, logger, config, services }) => ({
    housekeeping: createHousekeepingJob({ db, clock, logger, actionTokens: services.actionTokens, idleTimeoutMs: config.sessions.idleTimeoutSeconds * 1000 }),
  }),
  jobs: ({ housekeeping }) => [housekeeping],
  routes: [{ scope: 'api', register: (app, { storage }) => app.register(healthRoutes, { storage }) }],
});
