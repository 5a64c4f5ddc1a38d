/** E-mail verification: the link mailed at sign-up, its endpoints and pages. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { verificationConfigSection } from './verification.config.ts';
import { createVerificationService, type VerificationService } from './verification.service.ts';
import { verificationRoutes } from './verification.routes.ts';
import { signupPageRoutes } from './signup-pages.routes.ts';
import { VERIFICATION_PUBLIC_EVENTS } from './verification.public-events.ts';
import { verificationMail } from './verification.mail.ts';
import { VERIFY_EMAIL_PAGE } from './verification.service.ts';
import { SIGNUP_PAGE } from '../credentials/signup.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    verification: VerificationService;
  }
}

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['email.verified'] as const;
type VerificationAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends VerificationAuditEvents {}
}

export const verificationModule = defineModule({
  name: 'verification',
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => verificationMail,
  config: verificationConfigSection,
  auditEvents: AUDIT_EVENTS,
  publicEvents: VERIFICATION_PUBLIC_EVENTS,
  // At the end of the sign-in page: a new link for an address not yet verified, and the way to sign up while ALLOW_SIGNUP.
  pageLinks: ({ config }) => [
    { place: 'signin.below-form', order: 10, href: VERIFY_EMAIL_PAGE, message: 'verification.links.resendVerification', shownWhen: ({ code }) => code === 'EMAIL_NOT_VERIFIED' },
    { place: 'signin.below-form', order: 20, href: SIGNUP_PAGE, message: 'verification.links.signUp', shownWhen: () => config.accounts.allowSignup },
  ],
  provide: ({ db, config, services }) => ({
    verification: createVerificationService({
      db,
      users: services.users,
      tokens: services.actionTokens,
      mail: services.mail,
      audit: services.audit,
      ttlSeconds: config.accounts.verificationTokenTtlSeconds,
    }),
  }),
  routes: [
    { scope: 'browser', register: (app, { services }) => app.register(verificationRoutes, { verification: services.verification, limits: services.limits }) },
    { scope: 'browser', register: (app, { services, config }) => app.register(signupPageRoutes, { verification: services.verification, config }) },
  ],
});
