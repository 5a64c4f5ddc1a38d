/**
 * E-mail/password credentials: sign-in and the creation of password users (CLI, bootstrap admin,
 * later sign-up and the admin API). Outcomes are return values; the routes map them to HTTP.
 */
import type { User, UserService } from '../users/user.service.ts';
import { normaliseEmail } from '../users/email.ts';
import type { AuditService } from '../audit/audit.service.ts';
import type { SessionService, StartedSession } from '../sessions/session.service.ts';
import type { PasswordHasher } from './password-hasher.ts';
import { checkPassword, type PasswordPolicy, type PasswordRejection } from './password-policy.ts';

export type SignInResult =
  | { ok: true; user: User; session: StartedSession }
  | { ok: false; reason: 'INVALID_CREDENTIALS' | 'ACCOUNT_DISABLED' };

export type CreatePasswordUserResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'EMAIL_TAKEN' | 'INVALID_ROLE' }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection };

export interface SignInInput {
  email: string;
  password: string;
  ip: string | null;
  userAgent: string | null;
}

export type CredentialsService = ReturnType<typeof createCredentialsService>;

export function createCredentialsService(deps: {
  users: UserService;
  sessions: SessionService;
  hasher: PasswordHasher;
  policy: PasswordPolicy;
  audit: AuditService;
}) {
  const { users, sessions, hasher, policy, audit } = deps;

  return {
    /**
     * Every outcome is recorded in the audit log (`signin.success`, or `signin.failure` with the
     * reason and the address tried), never the password. An unknown address and a wrong password
     * cost the same: one lookup, one hash verification, one audit write.
     */
    async signIn(input: SignInInput): Promise<SignInResult> {
      const source = { actorUserId: null, ip: input.ip, userAgent: input.userAgent };
      async function refuse(reason: 'INVALID_CREDENTIALS' | 'ACCOUNT_DISABLED', userId: string | null): Promise<SignInResult> {
        await audit.record({ type: 'signin.failure', userId, email: normaliseEmail(input.email), source, reason });
        return { ok: false, reason };
      }

      const credentials = await users.findCredentialsByEmail(input.email);
      if (credentials === null || credentials.passwordHash === null) {
        // Same work as a wrong password, so the answer's timing does not reveal the account.
        await hasher.verifyDummy(input.password);
        return refuse('INVALID_CREDENTIALS', credentials?.id ?? null);
      }
      if (!(await hasher.verify(credentials.passwordHash, input.password))) {
        return refuse('INVALID_CREDENTIALS', credentials.id);
      }
      // Only someone who knows the password learns the account is disabled.
      if (credentials.disabledAt !== null) return refuse('ACCOUNT_DISABLED', credentials.id);

      if (hasher.needsRehash(credentials.passwordHash)) {
        await users.setPasswordHash(credentials.id, await hasher.hash(input.password));
      }
      const user = await users.findUserById(credentials.id);
      if (user === null) return { ok: false, reason: 'INVALID_CREDENTIALS' }; // deleted meanwhile
      const session = await sessions.startSession({ userId: user.id, roles: user.roles, ip: input.ip, userAgent: input.userAgent });
      await audit.record({ type: 'signin.success', userId: user.id, source, details: { sessionId: session.sessionId } });
      return { ok: true, user, session };
    },

    async createPasswordUser(input: {
      email: string;
      name: string;
      password: string;
      roles?: readonly string[];
      emailVerified?: boolean;
    }): Promise<CreatePasswordUserResult> {
      const rejection = checkPassword(input.password, policy, { email: input.email, name: input.name });
      if (rejection !== null) return { ok: false, reason: 'WEAK_PASSWORD', rejection };
      return users.createUser({
        email: input.email,
        name: input.name,
        passwordHash: await hasher.hash(input.password),
        roles: input.roles ?? [],
        emailVerified: input.emailVerified ?? false,
      });
    },
  };
}
