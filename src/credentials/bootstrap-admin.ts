/** Creates the ADMIN named by ADMIN_EMAIL/ADMIN_PASSWORD at start, when that address has no user. */
import type { Config } from '../config.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { CredentialsService } from './credentials.service.ts';
import { nameProblem } from '../users/name.ts';

export type BootstrapAdminResult = 'created' | 'exists' | 'not-configured';

export async function bootstrapAdmin(deps: {
  config: Config;
  users: UserService;
  credentials: CredentialsService;
  audit: AuditService;
}): Promise<BootstrapAdminResult> {
  const admin = deps.config.admin;
  if (admin === null) return 'not-configured';
  if ((await deps.users.findUserByEmail(admin.email)) !== null) return 'exists';
  // The rule every way of naming a user applies (users/name.ts).
  const nameRefusal = nameProblem(admin.name);
  if (nameRefusal !== null) throw new Error(`Cannot create the admin user: ADMIN_NAME ${nameRefusal}`);
  const result = await deps.credentials.createPasswordUser({
    email: admin.email,
    name: admin.name,
    password: admin.password,
    roles: [ADMIN_ROLE],
    emailVerified: true,
  });
  if (result.ok) {
    await deps.audit.record({
      type: 'user.created',
      userId: result.user.id,
      source: { actorUserId: null, ip: null, userAgent: null, via: 'bootstrap' },
      details: { roles: result.user.roles },
    });
    return 'created';
  }
  if (result.reason === 'EMAIL_TAKEN') return 'exists';
  // Misconfiguration: stop start-up with a message that names the variable, never the value.
  const why = result.reason === 'WEAK_PASSWORD' ? `ADMIN_PASSWORD ${result.rejection.message}` : result.reason === 'INVALID_ROLE' ? 'invalid admin role' : 'too many password checks at once';
  throw new Error(`Cannot create the admin user: ${why}`);
}
