/**
 * Audited impersonation: an administrator who used a second factor acts as a user (never an ADMIN
 * or a disabled account) for a time limit they choose (at most an hour) and a reason they give,
 * from the admin user page. It is a session of the user whose access tokens carry
 * `act: {sub: <administrator>}` (RFC 8693), shown by a banner on every page while it lasts
 * ("Stop" ends it), in which routes asking for a step-up, and those only the person may use
 * (IN_PERSON: letting an app act for them, unlinking a provider, ending their sessions), are refused. Its start and end are
 * audited (`impersonation.started`, `impersonation.ended`); after it ends the user gets a mail
 * saying when and why. See docs/guides/admin-and-audit.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { IN_PERSON } from '../authorization/access.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import * as table from './migrations/20261129-impersonation-table.ts';
import { IMPERSONATION_ERRORS } from './impersonation.errors.ts';
import { createImpersonationService, type ImpersonationService } from './impersonation.service.ts';
import { actingAdministratorClaim } from './impersonation.store.ts';
import { impersonationMail } from './impersonation.mail.ts';
import { impersonationPageSections, impersonationRoutes, registerImpersonationHooks } from './impersonation.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    impersonation: ImpersonationService;
  }
}

const AUDIT_EVENTS = ['impersonation.started', 'impersonation.ended'] as const;
type ImpersonationAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends ImpersonationAuditEvents {}
}

export const impersonationModule = defineModule({
  name: 'impersonation',
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => impersonationMail,
  migrations: { '20261129-impersonation-table': table },
  errors: IMPERSONATION_ERRORS,
  auditEvents: AUDIT_EVENTS,
  provide({ db, clock, services }) {
    const { audit, mail, users, sessions } = services;
    return { impersonation: createImpersonationService({ db, clock, audit, mail, users, sessions }) };
  },
  // An impersonation past its time limit (its session expired with it): its end recorded and mailed.
  jobs: ({ impersonation }, { logger }) => [
    createPeriodicJob({ name: 'impersonation-expiry', intervalMs: 60_000, firstDelayMs: 10_000, logger, run: () => impersonation.endExpired() }),
  ],
  // `act: {sub}`, the administrator acting (RFC 8693 4.1), in every token of an impersonation's session.
  tokenClaims: () => actingAdministratorClaim,
  pageSections: ({ users }) => impersonationPageSections(users),
  // What only the person may do (routes that name IN_PERSON, and every route asking for a step-up:
  // the access hook adds IN_PERSON to those): refused while an administrator acts as them.
  accessRequirements: ({ impersonation }) => [
    {
      name: IN_PERSON,
      check: async (auth) => ((await impersonation.activeFor(auth.sessionId)) === null ? null : { code: 'IMPERSONATION_FORBIDDEN_ACTION' }),
    },
  ],
  routes: [
    {
      scope: 'browser',
      register: async (app, { services, csrf, config, clock }) => {
        // On the browser scope itself: the banner covers every page.
        registerImpersonationHooks(app, { impersonation: services.impersonation, users: services.users });
        await app.register(impersonationRoutes, { impersonation: services.impersonation, users: services.users, sessions: services.sessions, csrf, config, clock });
      },
    },
  ],
});
