/**
 * Trusted devices for the second factor: "Don't ask again on this browser for 30 days" after a
 * second factor. A browser the user trusted carries a signed cookie bound to them; while the
 * device lives, their sign-ins from it skip the second factor (a `secondFactorWaivers` entry the
 * MFA module's step asks), with a session whose `amr` claims no second factor. Devices are
 * forgotten from the dashboard or the API, and with every change that calls for the factor again.
 * Off for holders of MFA_REQUIRED_ROLES unless MFA_TRUSTED_DEVICES_FOR_REQUIRED_ROLES. See
 * docs/guides/mfa.md#trusted-browsers.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import type { AuditEventType } from '../audit/audit.service.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import * as table from './migrations/20261201-trusted-devices-table.ts';
import { trustedDevicesConfigSection } from './trusted-devices.config.ts';
import { TRUSTED_DEVICES_ERRORS } from './trusted-devices.errors.ts';
import { createTrustedDevicesService, type TrustedDevicesService } from './trusted-devices.service.ts';
import { createDeviceTokenCodec } from './trusted-device-token.ts';
import { createTrustedDeviceWaiver } from './trusted-devices.waiver.ts';
import type { SecondFactorWaiver } from '../signin/second-factor-waiver.ts';
import { trustedDevicesApiRoutes, trustedDevicesFormRoutes, trustedDevicesPageSections } from './trusted-devices.routes.ts';
import { trustedDevicesAdminRoutes, trustedDevicesAdminSection } from './trusted-devices-admin.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    trustedDevices: TrustedDevicesService;
    trustedDeviceWaiver: SecondFactorWaiver;
  }
}

const AUDIT_EVENTS = ['trusted_device.added', 'trusted_device.forgotten'] as const;
type TrustedDevicesAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends TrustedDevicesAuditEvents {}
}

/**
 * The changes after which no browser skips the second factor: a new password (a reset or a
 * change), a second factor added, removed or reset, new recovery codes, "sign out everywhere", a
 * disabled account. (A deleted account's devices go with its row.)
 */
const REVOKING_EVENTS = [
  'password.reset',
  'password.changed',
  'user.sessions_ended',
  'user.disabled',
  'mfa.totp_enabled',
  'mfa.totp_disabled',
  'mfa.recovery_codes_renewed',
  'mfa.reset',
  'passkey.added',
  'passkey.removed',
] as const satisfies readonly AuditEventType[];

export const trustedDevicesModule = defineModule({
  name: 'trusted-devices',
  openApiTags: [{ name: 'trusted-devices', description: 'Browsers that skip the second factor at sign-in ("Don\'t ask again on this browser").' }],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  config: trustedDevicesConfigSection,
  migrations: { '20261201-trusted-devices-table': table },
  errors: TRUSTED_DEVICES_ERRORS,
  auditEvents: AUDIT_EVENTS,
  provide({ db, clock, config, services }) {
    const { audit, users } = services;
    const trustedDevices = createTrustedDevicesService({ db, clock, audit, codec: createDeviceTokenCodec(config.authSecret), config: config.trustedDevices, requiredRoles: config.mfa.requiredRoles });
    return { trustedDevices, trustedDeviceWaiver: createTrustedDeviceWaiver({ trustedDevices, users, config }) };
  },
  jobs: ({ trustedDevices }, { logger }) => [createPeriodicJob({ name: 'trusted-devices-cleanup', intervalMs: 3_600_000, firstDelayMs: 60_000, logger, run: () => trustedDevices.deleteExpired() })],
  secondFactorWaivers: ({ trustedDeviceWaiver }) => [trustedDeviceWaiver],
  subscriptions: ({ trustedDevices }) => [
    {
      types: REVOKING_EVENTS,
      async handle(event, db) {
        if (event.userId !== null) await trustedDevices.revokeAll(db, event.userId, event.type);
      },
    },
  ],
  // The rows go with the user's (cascade); an export lists them, without their secrets.
  userData: ({ trustedDevices }) => ({ export: async (userId) => ({ trustedDevices: await trustedDevices.list(userId) }) }),
  // The user's list on their dashboard; the count and "Forget all" on the admin's page of a user.
  pageSections: ({ trustedDevices }) => [...trustedDevicesPageSections(trustedDevices), trustedDevicesAdminSection(trustedDevices)],
  routes: [
    { scope: 'api', register: (app, { services }) => app.register(trustedDevicesApiRoutes, { trustedDevices: services.trustedDevices }) },
    {
      scope: 'browser',
      register: async (app, { services }) => {
        await app.register(trustedDevicesFormRoutes, { trustedDevices: services.trustedDevices });
        await app.register(trustedDevicesAdminRoutes, { trustedDevices: services.trustedDevices, users: services.users });
      },
    },
  ],
});
