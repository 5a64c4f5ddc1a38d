/**
 * Users and roles: the store every other feature reads users through. E-mails are normalised
 * here, ids are random, and a duplicate address is an expected outcome, not an exception.
 */
import type { Db } from '../storage/database.ts';
import type { UserRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId } from '../lib/random.ts';
import { normaliseEmail } from './email.ts';
import * as store from './user.store.ts';

export const ADMIN_ROLE = 'ADMIN';
const ROLE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

export interface User {
  id: string;
  email: string;
  name: string;
  roles: string[];
  emailVerifiedAt: number | null;
  disabledAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * What sign-in needs before the password is checked, for the credentials feature only. It holds
 * no roles: the work done for a known address must match the work for an unknown one until the
 * password verifies.
 */
export interface UserCredentials {
  id: string;
  passwordHash: string | null;
  disabledAt: number | null;
}

export interface NewUser {
  email: string;
  name: string;
  passwordHash: string | null;
  roles?: readonly string[];
  emailVerified?: boolean;
}

export type CreateUserResult = { ok: true; user: User } | { ok: false; reason: 'EMAIL_TAKEN' | 'INVALID_ROLE' };

export type UserService = ReturnType<typeof createUserService>;

export function isValidRole(role: string): boolean {
  return ROLE_PATTERN.test(role);
}

export function createUserService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function toUser(row: UserRow): Promise<User> {
    return {
      id: row.id,
      email: row.email,
      name: row.name,
      roles: await store.findRolesByUserId(db, row.id),
      emailVerifiedAt: row.email_verified_at,
      disabledAt: row.disabled_at,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  return {
    async createUser(input: NewUser): Promise<CreateUserResult> {
      const roles = [...new Set(input.roles ?? [])];
      if (!roles.every(isValidRole)) return { ok: false, reason: 'INVALID_ROLE' };
      const email = normaliseEmail(input.email);
      if (await store.findUserByEmail(db, email)) return { ok: false, reason: 'EMAIL_TAKEN' };
      const now = clock();
      const row = {
        id: randomId(),
        email,
        name: input.name.trim(),
        password_hash: input.passwordHash,
        email_verified_at: input.emailVerified ? now : null,
        disabled_at: null,
        created_at: now,
        updated_at: now,
      };
      try {
        await store.insertUserWithRoles(db, row, roles);
      } catch (error) {
        // Two concurrent creations of one address: the unique index decides, the loser is told.
        if (await store.findUserByEmail(db, email)) return { ok: false, reason: 'EMAIL_TAKEN' };
        throw error;
      }
      return { ok: true, user: await toUser(row) };
    },

    /** Looks an address up by its normal form, for sign-in: one query, no roles. */
    async findCredentialsByEmail(email: string): Promise<UserCredentials | null> {
      const row = await store.findUserByEmail(db, normaliseEmail(email));
      return row ? { id: row.id, passwordHash: row.password_hash, disabledAt: row.disabled_at } : null;
    },

    async findUserByEmail(email: string): Promise<User | null> {
      const row = await store.findUserByEmail(db, normaliseEmail(email));
      return row ? toUser(row) : null;
    },

    async findUserById(id: string): Promise<User | null> {
      const row = await store.findUserById(db, id);
      return row ? toUser(row) : null;
    },

    async setPasswordHash(userId: string, passwordHash: string): Promise<void> {
      await store.updatePasswordHash(db, userId, passwordHash, clock());
    },

    async countUsers(): Promise<number> {
      return store.countUsers(db);
    },
  };
}
