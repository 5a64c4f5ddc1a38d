/**
 * Moving to Gatehouse: `gatehouse import` from another system's export (Auth0, Firebase, Keycloak,
 * Clerk, Supabase, the generic format), `gatehouse export users`, and the foreign password hashes
 * those accounts keep until their next sign-in (hash-schemes.ts, registered with the password check
 * through the `passwordHashSchemes` slot by foreign-hash-schemes.ts, which imports it at the first
 * one verified), and lazy migration from a live old system (LEGACY_VERIFY_URL, the
 * `passwordAccountSources` slot). See docs/guides/moving-to-gatehouse.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { cli } from './user-import.cli.ts';
import { FOREIGN_HASH_SCHEMES } from './foreign-hash-schemes.ts';
import { legacyAccountSources, legacyVerifyConfigSection } from './legacy-verify.ts';

const AUDIT_EVENTS = ['users.imported'] as const;
type UserImportAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends UserImportAuditEvents {}
}

export const userImportModule = defineModule({
  name: 'user-import',
  config: legacyVerifyConfigSection,
  // The words of its audit event in the admin log.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  auditEvents: AUDIT_EVENTS,
  passwordHashSchemes: FOREIGN_HASH_SCHEMES,
  passwordAccountSources: (config) => legacyAccountSources(config.legacyVerify),
  cli,
});
