/**
 * E-mail/password credentials: sign-in and the creation of password users (CLI, bootstrap admin,
 * later sign-up and the admin API). Outcomes are return values; the routes map them to HTTP.
 */
import type { User, UserService } from '../users/user.service.ts';
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
}) {
  const { users, sessions, hasher, policy } = deps;

  return {
    async signIn(input: SignInInput): Promise<SignInResult> {
      const credentials = await users.findCredentialsByEmail(input.email);
      if (credentials === null || credentials.passwordHash === null) {
        // Same work as a wrong password, so the answer's timing does not reveal the account.
        await hasher.verifyDummy(input.password);
        return { ok: false, reason: 'INVALID_CREDENTIALS' };
      }
      if (!(await hasher.verify(credentials.passwordHash, input.password))) {
        return { ok: false, reason: 'INVALID_CREDENTIALS' };
      }
      // Only someone who knows the password learns the account is disabled.
      if (credentials.disabledAt !== null) return { ok: false, reason: 'ACCOUNT_DISABLED' };

      if (hasher.needsRehash(credentials.passwordHash)) {
        await users.setPasswordHash(credentials.id, await hasher.hash(input.password));
      }
      const user = await users.findUserById(credentials.id);
      if (user === null) return { ok: false, reason: 'INVALID_CREDENTIALS' }; // deleted meanwhile
      const session = await sessions.startSession({ userId: user.id, roles: user.roles, ip: input.ip, userAgent: input.userAgent });
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
