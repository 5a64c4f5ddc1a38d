/** The sign-in pipeline every first factor ends in; its steps and the kinds of first factor come from the modules that declare them. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { SIGNIN_ERRORS } from './signin.errors.ts';
import { createSignInPipeline, type SignInPipeline } from './signin-pipeline.ts';
import { SIGNIN_PUBLIC_EVENTS } from './signin.public-events.ts';
import { SIGNIN_COUNTED_EVENTS, SIGNIN_COUNTERS } from './signin.metrics.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    signInPipeline: SignInPipeline;
  }
}

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['signin.success', 'signin.failure'] as const;
type SignInAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends SignInAuditEvents {}
}

export const signInModule = defineModule({
  name: 'signin',
  // The descriptions of its webhook events (publicEvents), for the administrators' pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  errors: SIGNIN_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: SIGNIN_PUBLIC_EVENTS,
  counters: SIGNIN_COUNTERS,
  countedEvents: SIGNIN_COUNTED_EVENTS,
  provide: ({ services, clock, config, signInSteps, firstFactorKinds }) => ({
    signInPipeline: createSignInPipeline({
      users: services.users,
      sessions: services.sessions,
      audit: services.audit,
      clock,
      requireEmailVerification: config.accounts.requireEmailVerification,
      steps: signInSteps,
      firstFactorKinds,
    }),
  }),
});
