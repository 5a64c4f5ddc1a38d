/**
 * Moving to Gatehouse: `gatehouse import` from another system's export (Auth0, Firebase, Keycloak,
 * Clerk, Supabase, the generic format), `gatehouse export users`, and the foreign password hashes
 * those accounts keep until their next sign-in (hash-schemes.ts, registered with the password check
 * through the `passwordHashSchemes` slot). See docs/guides/moving-to-gatehouse.md.
 */
import { defineModule } from '../module.ts';
import { cli } from './user-import.cli.ts';
import { FOREIGN_HASH_SCHEMES } from './hash-schemes.ts';

const AUDIT_EVENTS = ['users.imported'] as const;
type UserImportAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends UserImportAuditEvents {}
}

export const userImportModule = defineModule({
  name: 'user-import',
  auditEvents: AUDIT_EVENTS,
  passwordHashSchemes: FOREIGN_HASH_SCHEMES,
  cli,
});
