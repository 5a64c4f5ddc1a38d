/**
 * Multi-factor sign-in: an authenticator app (TOTP) and recovery codes, the second-factor step of
 * every sign-in, and the API to enrol, remove and answer them. Other modules register other kinds
 * of second factor (`secondFactors`: passkeys); this module registers TOTP the same way.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule, type AccessPolicy, type AccessRequirement } from '../module.ts';
import { mfaUserData } from './mfa.user-data.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import { MFA_ERRORS } from './mfa.errors.ts';
import { mfaConfigSection } from './mfa.config.ts';
import * as mfaFactors from './migrations/20261124-mfa-factors.ts';
import * as mfaChallengeBinding from './migrations/20261129-mfa-challenge-binding.ts';
import * as mfaChallengeDelivery from './migrations/20261130-mfa-challenge-delivery.ts';
import { createMfaService, type MfaService } from './mfa.service.ts';
import { createSecondFactor, type SecondFactor } from './second-factor.ts';
import { deleteExpiredChallenges } from './mfa.store.ts';
import { mfaRoutes } from './mfa.routes.ts';
import { mfaPageRoutes, mfaPageSections } from './mfa-pages.routes.ts';
import { createMfaPolicy, createMfaRequirements } from './mfa-policy.ts';
import { MFA_PUBLIC_EVENTS } from './mfa.public-events.ts';
import { MFA_COUNTERS, mfaCountedEvents } from './mfa.metrics.ts';
import { MFA_SECURITY_NOTICES } from './mfa.mail.ts';
import type { SecondFactorWaiver } from '../signin/second-factor-waiver.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    mfa: MfaService;
    secondFactor: SecondFactor;
    /** MFA_REQUIRED_ROLES on every signed-in request, and step-up for sensitive changes. */
    mfaPolicies: readonly AccessPolicy[];
    mfaRequirements: readonly AccessRequirement[];

  }
}

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['mfa.totp_enabled', 'mfa.totp_disabled', 'mfa.recovery_codes_renewed', 'mfa.reset'] as const;
type MfaAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends MfaAuditEvents {}
}

export const mfaModule = defineModule({
  name: 'mfa',
  openApiTags: [
    { name: 'mfa', description: 'Second factors: TOTP, recovery codes, the second step of a sign-in and step-up.' },
  ],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  securityNotices: MFA_SECURITY_NOTICES,
  config: mfaConfigSection,
  migrations: { '20261124-mfa-factors': mfaFactors, '20261129-mfa-challenge-binding': mfaChallengeBinding, '20261130-mfa-challenge-delivery': mfaChallengeDelivery },
  errors: MFA_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: MFA_PUBLIC_EVENTS,
  counters: MFA_COUNTERS,
  countedEvents: mfaCountedEvents(AUDIT_EVENTS),
  provide({ db, clock, config, services, modules, firstFactorKinds, secondFactorKinds }) {
    const { users, audit, mail, signInThrottle, signInPipeline, rateLimiters } = services;
    const mfa = createMfaService({
      db,
      clock,
      users,
      audit,
      mail,
      throttle: signInThrottle,
      codeAttempts: rateLimiters.create('mfa-codes-account', config.mfa.codesPerAccount),
      config: config.mfa,
      authSecret: config.authSecret,
      factorKinds: secondFactorKinds,
    });
    // Every module's waivers (`secondFactorWaivers`), known at the first sign-in, once every module is built.
    let waivers: readonly SecondFactorWaiver[] | null = null;
    const secondFactorWaivers = () => (waivers ??= modules.flatMap((module) => module.secondFactorWaivers?.(services) ?? []));
    return {
      mfa,
      secondFactor: createSecondFactor({ db, clock, users, audit, mfa, pipeline: signInPipeline, firstFactorKinds, waivers: secondFactorWaivers }),
      mfaPolicies: [createMfaPolicy({ mfa, config: config.mfa, clock })],
      mfaRequirements: createMfaRequirements({ mfa, config: config.mfa, clock }),
    };
  },
  // Challenges nobody answered are deleted once expired.
  jobs: (_services, { db, clock, logger }) => [createPeriodicJob({ name: 'mfa-challenge-cleanup', intervalMs: 60_000, firstDelayMs: 60_000, logger, run: async () => void (await deleteExpiredChallenges(db, clock())) })],
  signInSteps: ({ secondFactor }) => [secondFactor.step],
  secondFactors: ({ mfa }) => [mfa.totpFactor],
  // A user's second factors and recovery codes, as GET /api/auth/mfa shows them (the rows go with the user's, on cascade).
  userData: ({ mfa }) => mfaUserData(mfa),
  accessPolicies: ({ mfaPolicies }) => mfaPolicies,
  accessRequirements: ({ mfaRequirements }) => mfaRequirements,
  pageSections: ({ mfa, users, config }) => mfaPageSections({ mfa, users, requiredRoles: config.mfa.requiredRoles }),
  routes: [
    {
      scope: 'browser',
      register: (app, { services, csrf, config, clock, pageSections, askingApp }) =>
        app.register(mfaPageRoutes, {
          mfa: services.mfa,
          secondFactor: services.secondFactor,
          users: services.users,
          sessions: services.sessions,
          csrf,
          config,
          clock,
          promptSections: pageSections('mfa-prompt'),
          askingApp,
        }),
    },
    {
      scope: 'api',
      register: (app, { services, csrf, config, clock }) =>
        app.register(mfaRoutes, {
          mfa: services.mfa,
          secondFactor: services.secondFactor,
          users: services.users,
          sessions: services.sessions,
          config: config.mfa,
          cookieConfig: config,
          csrf,
          clock,
        }),
    },
  ],
});
