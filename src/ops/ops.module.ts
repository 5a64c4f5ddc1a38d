/** Operations: the health endpoints (live, ready), and housekeeping of ended sessions, tokens and counters. */
import { collectMigrations, defineModule } from '../module.ts';
import { createHousekeepingJob } from './housekeeping.ts';
import { healthRoutes } from './health.routes.ts';
import { createReadiness, type Readiness } from './readiness.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    housekeeping: ReturnType<typeof createHousekeepingJob>;
    readiness: Readiness;
  }
}

export const opsModule = defineModule({
  name: 'ops',
  openApiTags: [
    { name: 'operations', description: 'Health for load balancers and orchestrators.' },
  ],
  provide: ({ db, clock, logger, config, services, storage, modules }) => ({
    housekeeping: createHousekeepingJob({ db, clock, logger, actionTokens: services.actionTokens, idleTimeoutMs: config.sessions.idleTimeoutSeconds * 1000 }),
    readiness: createReadiness({ storage, keys: services.keys, migrations: collectMigrations(modules) }),
  }),
  jobs: ({ housekeeping }) => [housekeeping],
  routes: [{ scope: 'api', register: (app, { storage, services }) => app.register(healthRoutes, { storage, readiness: services.readiness }) }],
});
