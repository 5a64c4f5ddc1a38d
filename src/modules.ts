/**
 * Every capability of Gatehouse, in order: a module may use the services of those above it.
 * Adding a capability is a folder with its module and one line here (and its migration).
 */
import type { MigrationResultSet } from 'kysely/migration';
import { readConfig, type Config, type Env, type LoadConfigOptions } from './config.ts';
import { collectConfigSections, collectErrorCatalogue, collectMigrations, type CatalogueEntry, type GatehouseModule } from './module.ts';
import type { Db } from './storage/database.ts';
import { applyMigrations } from './storage/migrations.ts';
import { i18nModule } from './i18n/i18n.module.ts';
import { brandingModule } from './branding/branding.module.ts';
import { auditModule } from './audit/audit.module.ts';
import { usersModule } from './users/users.module.ts';
import { mailModule } from './mail/mail.module.ts';
import { tokensModule } from './tokens/tokens.module.ts';
import { rateLimitsModule } from './http/rate-limits.module.ts';
import { sessionsModule } from './sessions/sessions.module.ts';
import { signInModule } from './signin/signin.module.ts';
import { verificationModule } from './verification/verification.module.ts';
import { credentialsModule } from './credentials/credentials.module.ts';
import { passwordResetModule } from './password-reset/password-reset.module.ts';
import { oauthModule } from './oauth/oauth.module.ts';
import { passkeysModule } from './passkeys/passkeys.module.ts';
import { mfaModule } from './mfa/mfa.module.ts';
import { trustedDevicesModule } from './trusted-devices/trusted-devices.module.ts';
import { emailSignInModule } from './email-signin/email-signin.module.ts';
import { oidcClientsModule } from './oidc-clients/oidc-clients.module.ts';
import { oidcProviderModule } from './oidc-provider/oidc-provider.module.ts';
import { organizationsModule } from './organizations/organizations.module.ts';
import { orgDomainsModule } from './org-domains/org-domains.module.ts';
import { webhooksModule } from './webhooks/webhooks.module.ts';
import { scimModule } from './scim/scim.module.ts';
import { dataExportModule } from './data-export/data-export.module.ts';
import { accountDeletionModule } from './account-deletion/account-deletion.module.ts';
import { metricsModule } from './metrics/metrics.module.ts';
import { impersonationModule } from './impersonation/impersonation.module.ts';
import { apiKeysModule } from './api-keys/api-keys.module.ts';
import { ssoModule } from './sso/sso.module.ts';
import { adminModule } from './admin/admin.module.ts';
import { opsModule } from './ops/ops.module.ts';
import { pagesModule } from './pages/pages.module.ts';
import { userImportModule } from './user-import/user-import.module.ts';

export const MODULES: readonly GatehouseModule[] = [
  i18nModule,
  brandingModule,
  auditModule,
  usersModule,
  mailModule,
  tokensModule,
  rateLimitsModule,
  sessionsModule,
  signInModule,
  verificationModule,
  credentialsModule,
  // Before password-reset: a reset lists the linked providers, each removable (oauth's review link).
  oauthModule,
  passwordResetModule,
  passkeysModule,
  mfaModule,
  trustedDevicesModule,
  emailSignInModule,
  oidcClientsModule,
  oidcProviderModule,
  organizationsModule,
  orgDomainsModule,
  webhooksModule,
  scimModule,
  dataExportModule,
  accountDeletionModule,
  metricsModule,
  impersonationModule,
  apiKeysModule,
  ssoModule,
  adminModule,
  opsModule,
  pagesModule,
  userImportModule,
];

/** Applies every pending migration of every module (in the lexical order of their names). */
export async function migrateToLatest(db: Db, modules: readonly GatehouseModule[] = MODULES): Promise<MigrationResultSet> {
  return applyMigrations(db, collectMigrations(modules));
}

/** Every error code a client can see, with its owner: the core's, then each listed module's. */
export function errorCatalogue(modules: readonly GatehouseModule[] = MODULES): Record<string, CatalogueEntry> {
  return collectErrorCatalogue(modules);
}

/** Reads and validates the configuration: the core's and every listed module's section, at once. */
export function loadConfig(env: Env = process.env, options: LoadConfigOptions = {}, modules: readonly GatehouseModule[] = MODULES): Config {
  return readConfig(env, { ...options, sections: collectConfigSections(modules) });
}
