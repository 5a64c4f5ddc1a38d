/**
 * Passwordless sign-in by e-mail: a mailed one-time link and code, each a first factor of the
 * sign-in pipeline (`email`; `amr` `email`, plus `otp` for a typed code), behind EMAIL_SIGNIN (off
 * by default). The start answers alike for every address; an unknown one is sent nothing, or,
 * while ALLOW_SIGNUP, a link that creates its account. See docs/guides/passwordless.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule, type ModuleContext } from '../module.ts';
import type { ResponseFloor } from '../lib/response-floor.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import * as requestsTable from './migrations/20261201-email-signin-requests.ts';
import { emailSignInConfigSection } from './email-signin.config.ts';
import { EMAIL_SIGNIN_ERRORS } from './email-signin.errors.ts';
import { emailSignInMail } from './email-signin.mail.ts';
import { emailFactorKind } from './email-factor.ts';
import { createEmailSignInService, type EmailSignInService } from './email-signin.service.ts';
import { emailSignInRoutes } from './email-signin.routes.ts';
import { emailSignInPageRoutes, emailSignInPageSections } from './email-signin-pages.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    emailSignIn: EmailSignInService;
  }
}

/** The audit events this module records; sign-ins themselves are the pipeline's `signin.*`. */
const AUDIT_EVENTS = ['email_signin.requested', 'email_signin.voided'] as const;
type EmailSignInAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends EmailSignInAuditEvents {}
}

/** The module's service from what modules are built with; `startFloor` for tests that hold the start's answer. */
export function buildEmailSignInService({ db, clock, config, services }: Pick<ModuleContext, 'db' | 'clock' | 'config' | 'services'>, startFloor?: ResponseFloor): EmailSignInService {
  return createEmailSignInService({
    db,
    clock,
    users: services.users,
    sessions: services.sessions,
    audit: services.audit,
    mail: services.mail,
    pipeline: services.signInPipeline,
    config: config.emailSignin,
    allowSignup: () => config.accounts.allowSignup,
    authSecret: config.authSecret,
    wrongCodes: services.rateLimiters.create('email-signin-wrong-codes', config.emailSignin.wrongCodesPerAddress),
    ...(startFloor !== undefined && { startFloor }),
  });
}

export const emailSignInModule = defineModule({
  name: 'email-signin',
  openApiTags: [{ name: 'email-signin', description: 'Passwordless sign-in by a mailed one-time link or code (EMAIL_SIGNIN).' }],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => emailSignInMail,
  config: emailSignInConfigSection,
  migrations: { '20261201-email-signin-requests': requestsTable },
  errors: EMAIL_SIGNIN_ERRORS,
  // Not published as webhooks: a request says nothing an app needs, and a sign-in is the pipeline's `session.created`.
  auditEvents: AUDIT_EVENTS,
  provide: (context) => ({ emailSignIn: buildEmailSignInService(context) }),
  // Requests long expired are deleted (the audit log keeps their history).
  jobs: ({ emailSignIn }, { logger }) => [createPeriodicJob({ name: 'email-signin-cleanup', intervalMs: 10 * 60_000, firstDelayMs: 60_000, logger, run: () => emailSignIn.deleteExpired() })],
  firstFactors: () => [emailFactorKind],
  pageSections: ({ emailSignIn }) => emailSignInPageSections(emailSignIn),
  routes: [
    {
      scope: 'browser',
      register: (app, { services, csrf, config, clock }) =>
        app.register(emailSignInRoutes, { emailSignIn: services.emailSignIn, sessions: services.sessions, rateLimiters: services.rateLimiters, csrf, config, clock }),
    },
    { scope: 'browser', register: (app, { services, config }) => app.register(emailSignInPageRoutes, { emailSignIn: services.emailSignIn, config }) },
  ],
});
