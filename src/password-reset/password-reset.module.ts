/** Password reset by a mailed link, and a signed-in user's password change; their pages. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { createPasswordResetService, FORGOT_PASSWORD_PAGE, type PasswordResetService } from './password-reset.service.ts';
import { passwordRoutes } from './password.routes.ts';
import { passwordPageRoutes } from './password-pages.routes.ts';
import { LINK_REVIEW_PAGE } from '../oauth/oauth.service.ts';
import { PASSWORD_RESET_PUBLIC_EVENTS } from './password-reset.public-events.ts';
import { passwordResetMail } from './password-reset.mail.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    passwordReset: PasswordResetService;
  }
}

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['password.reset_requested', 'password.reset'] as const;
type PasswordResetAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends PasswordResetAuditEvents {}
}

export const passwordResetModule = defineModule({
  name: 'password-reset',
  openApiTags: [
    { name: 'password', description: 'Forgotten, reset and changed passwords.' },
  ],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => passwordResetMail,
  auditEvents: AUDIT_EVENTS,
  publicEvents: PASSWORD_RESET_PUBLIC_EVENTS,
  // The way to a new password from the sign-in form and from the dashboard's change-password form.
  // Where the owner of an account takes it back: the mails' "Reset your password" (mail module).
  accountRecoveryPage: FORGOT_PASSWORD_PAGE,
  pageLinks: () => [
    { place: 'signin.below-password', order: 10, href: FORGOT_PASSWORD_PAGE, message: 'password-reset.links.forgotPassword' },
    { place: 'dashboard.below-password-form', order: 10, href: FORGOT_PASSWORD_PAGE, message: 'password-reset.links.setByEmail' },
  ],
  provide: ({ db, config, services }) => ({
    passwordReset: createPasswordResetService({
      db,
      ...('oauth' in services && { linkedProviders: { issueLinkReview: services.oauth.issueLinkReview, reviewPage: LINK_REVIEW_PAGE } }),
      users: services.users,
      credentials: services.credentials,
      tokens: services.actionTokens,
      mail: services.mail,
      audit: services.audit,
      ttlSeconds: config.accounts.resetTokenTtlSeconds,
    }),
  }),
  routes: [
    {
      scope: 'browser',
      register: (app, { services }) => app.register(passwordRoutes, { passwordReset: services.passwordReset, credentials: services.credentials, limits: services.limits }),
    },
    {
      scope: 'browser',
      register: (app, { services, config }) =>
        app.register(passwordPageRoutes, { passwordReset: services.passwordReset, config, ...('oauth' in services && { linkReviews: services.oauth }) }),
    },
  ],
});
