/**
 * Passkeys (WebAuthn): register them from the dashboard, sign in with one alone (a discoverable
 * credential with user verification), use one as the second factor after a password, or to step
 * up. Its passkeys are a first factor of the sign-in pipeline and a second factor the mfa module
 * lists, counts and resets (passkey-factor.ts). Listed before the mfa module: the routes reach the
 * mfa module's services (recovery codes, the second-factor challenge) once every module is built.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import type { Db } from '../storage/database.ts';
import { PASSKEY_ERRORS } from './passkeys.errors.ts';
import * as passkeysTables from './migrations/20261125-passkeys.ts';
import { createPasskeyService, type PasskeyService, type RecoveryCodeIssuer } from './passkeys.service.ts';
import { passkeyRoutes, type SecondFactorPort } from './passkeys.routes.ts';
import { passkeyAssetRoutes, passkeyFormRoutes, passkeyPageSections } from './passkeys-pages.ts';
import { passkeyFactorKind, passkeySecondFactorKind } from './passkey-factor.ts';
import { PASSKEYS_PUBLIC_EVENTS } from './passkeys.public-events.ts';
import { PASSKEYS_COUNTED_EVENTS } from './passkeys.metrics.ts';
import { PASSKEYS_SECURITY_NOTICES } from './passkeys.mail.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    passkeys: PasskeyService;
  }
}

/** The audit events (domain events) this module records; sign-ins are the pipeline's `signin.*`. */
const AUDIT_EVENTS = ['passkey.added', 'passkey.renamed', 'passkey.removed'] as const;
type PasskeyAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends PasskeyAuditEvents {}
}

/** Without the mfa module in the list: no recovery codes, and no challenge to answer. */
const NO_RECOVERY_CODES: RecoveryCodeIssuer = { issueRecoveryCodesIfNone: async (_trx: Db, _userId: string) => null };
const NO_SECOND_FACTOR: SecondFactorPort = { userOf: async () => null, finishWith: async () => ({ ok: false, reason: 'INVALID_TOKEN' }), remember: async () => {} };

export const passkeysModule = defineModule({
  name: 'passkeys',
  openApiTags: [
    { name: 'passkeys', description: 'WebAuthn passkeys: registration, sign-in and step-up.' },
  ],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  securityNotices: PASSKEYS_SECURITY_NOTICES,
  migrations: { '20261125-passkeys': passkeysTables },
  errors: PASSKEY_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: PASSKEYS_PUBLIC_EVENTS,
  countedEvents: PASSKEYS_COUNTED_EVENTS,
  provide({ db, clock, logger, config, services }) {
    const { audit, mail, users } = services;
    const authUrl = new URL(config.authUrl);
    return {
      passkeys: createPasskeyService({ db, clock, logger, audit, mail, users, config: { rpId: authUrl.hostname, origin: authUrl.origin, rpName: config.mfa.issuer } }),
    };
  },
  // Challenges nobody answered are deleted once expired.
  jobs: ({ passkeys }, { logger }) => [createPeriodicJob({ name: 'passkey-challenge-cleanup', intervalMs: 60_000, firstDelayMs: 60_000, logger, run: async () => void (await passkeys.deleteExpiredChallenges()) })],
  firstFactors: ({ passkeys }) => [passkeyFactorKind(passkeys)],
  secondFactors: ({ passkeys }) => [passkeySecondFactorKind(passkeys)],
  // On the second-factor page, the waivers' fields ("Don't ask again on this browser") the mfa module gathers, beside the passkey button.
  pageSections: (services) => passkeyPageSections(services.passkeys, (page, userId, formId) => (services as Partial<typeof services>).secondFactor?.promptFields(page, userId, formId) ?? Promise.resolve([])),
  // A user's passkeys, by name and dates, never their keys (the rows go with the user's, on cascade).
  userData: ({ passkeys }) => ({ export: async (userId) => ({ passkeys: await passkeys.listPasskeys(userId) }) }),
  routes: [
    {
      scope: 'api',
      register: async (app, { services, csrf, config, clock }) => {
        await app.register(passkeyRoutes, {
          passkeys: services.passkeys,
          users: services.users,
          sessions: services.sessions,
          signInPipeline: services.signInPipeline,
          audit: services.audit,
          rateLimiters: services.rateLimiters,
          // Listed after this module: its services are there once all are built, as they are now.
          mfa: () => {
            const registry = services as Partial<typeof services>;
            return { recoveryCodes: registry.mfa ?? NO_RECOVERY_CODES, secondFactor: registry.secondFactor ?? NO_SECOND_FACTOR };
          },
          csrf,
          config,
          clock,
        });
        await app.register(passkeyAssetRoutes);
      },
    },
    {
      scope: 'browser',
      register: (app, { services, config, clock }) => app.register(passkeyFormRoutes, { passkeys: services.passkeys, users: services.users, config, clock }),
    },
  ],
});
