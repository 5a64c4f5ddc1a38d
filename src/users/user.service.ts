/**
 * Users and roles: the store every other feature reads users through. E-mails are normalised
 * here, ids are random, and a duplicate address is an expected outcome, not an exception.
 */
import type { Db } from '../storage/database.ts';
import type { UserRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId } from '../lib/random.ts';
import { toPage, type KeysetPosition } from '../lib/keyset-cursor.ts';
import { toLocale, type Locale } from '../i18n/locales.ts';
import { normaliseEmail } from './email.ts';
import { parseUserSearch, type UserSearch } from './user-search.ts';
import * as store from './user.store.ts';

// The same role the prefix rules (GATEHOUSE_RULES) and gatehouse-protect require under /admin.
import { ADMIN_ROLE, isValidRole } from './roles.ts';
export { ADMIN_ROLE, isValidRole } from './roles.ts';

export interface User {
  id: string;
  email: string;
  name: string;
  roles: string[];
  emailVerifiedAt: number | null;
  /**
   * When the name became one mails may greet the user by; null while it is only what a
   * self-service sign-up typed (see `greetingName` in name.ts).
   */
  nameConfirmedAt: number | null;
  /**
   * The language of the user's mails: from the browser that signed up, a language the user chose
   * on a page while signed in, or the first sign-in's; null while none is known (see locale.ts).
   */
  locale: Locale | null;
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
  /** Set after too many consecutive failed sign-ins; a new password (reset) clears it. */
  passwordLockedAt: number | null;
}

export interface NewUser {
  email: string;
  name: string;
  passwordHash: string | null;
  roles?: readonly string[];
  /**
   * Whoever vouches for the address (an administrator, the CLI, ADMIN_EMAIL, a provider that
   * verified it) also gave the name: with a verified address, the name counts as confirmed too.
   */
  emailVerified?: boolean;
  /** The language of their mails, when known (a sign-up: the browser's). */
  locale?: Locale | null;
}

export type CreateUserResult = { ok: true; user: User } | { ok: false; reason: 'EMAIL_TAKEN' | 'INVALID_ROLE' };

export interface UserChanges {
  name?: string;
  /** The complete new set of roles. */
  roles?: readonly string[];
  disabled?: boolean;
}

/** A user as it was and as it is after an update. */
export interface UserChange {
  before: User;
  after: User;
}

export type UpdateUserResult =
  | ({ ok: true; user: User } & UserChange)
  | { ok: false; reason: 'NOT_FOUND' | 'INVALID_ROLE' }
  /** `actingAdminId` was no longer an enabled ADMIN when the change was to be made. */
  | { ok: false; reason: 'ACTOR_NOT_ADMIN' };

export type DeleteUserResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'NOT_FOUND' | 'ACTOR_NOT_ADMIN' | 'LAST_ADMIN' }
  | { ok: false; reason: 'REFUSED'; refusal: string };

export type UserService = ReturnType<typeof createUserService>;

export function createUserService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function toUser(row: UserRow, from: Db = db): Promise<User> {
    return toUserWithRoles(row, await store.findRolesByUserId(from, row.id));
  }

  return {
    /**
     * Creates the user and their roles in one transaction. `onCreated` runs inside it with its
     * `db` (to issue a verification token and enqueue its mail, say): the user exists only if
     * that succeeds too. It must use only the `db` it is given.
     */
    async createUser(input: NewUser, options: { onCreated?: (db: Db, user: User) => Promise<void> } = {}): Promise<CreateUserResult> {
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
        name_confirmed_at: input.emailVerified ? now : null,
        locale: input.locale ?? null,
        disabled_at: null,
        password_locked_at: null,
        created_at: now,
        updated_at: now,
      };
      try {
        await db.transaction().execute(async (trx) => {
          await store.insertUserWithRoles(trx, row, roles);
          if (options.onCreated !== undefined) await options.onCreated(trx, await toUser(row, trx));
        });
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
      return row ? toCredentials(row) : null;
    },

    /** The same by id, for a signed-in user confirming their current password. */
    async findCredentialsById(id: string): Promise<UserCredentials | null> {
      const row = await store.findUserById(db, id);
      return row ? toCredentials(row) : null;
    },

    /**
     * Inside the caller's transaction: writes the user's row (its `updated_at`), which holds the
     * row's lock until that transaction ends, and returns their credentials as they are then; null
     * for an unknown id. Changes that must see each other (the last way to sign in) take it first.
     */
    async lockUser(trx: Db, id: string): Promise<UserCredentials | null> {
      if (!(await store.touchUser(trx, id, clock()))) return null;
      const row = await store.findUserById(trx, id);
      return row ? toCredentials(row) : null;
    },

    async findUserByEmail(email: string): Promise<User | null> {
      const row = await store.findUserByEmail(db, normaliseEmail(email));
      return row ? toUser(row) : null;
    },

    async findUserById(id: string): Promise<User | null> {
      const row = await store.findUserById(db, id);
      return row ? toUser(row) : null;
    },

    /**
     * The language stored for the account with this address; null for none or no account (one
     * query either way: an invitation's answer says nothing of whether the address has one).
     */
    async findLocaleByEmail(email: string): Promise<Locale | null> {
      const row = await store.findUserByEmail(db, normaliseEmail(email));
      return toLocale(row?.locale ?? null);
    },

    /** Locks the password after too many consecutive failed sign-ins; a new password unlocks it. */
    /** True when it was not locked before. */
    async lockPassword(userId: string): Promise<boolean> {
      return store.lockPassword(db, userId, clock());
    },

    /**
     * Pass `options.db` (a transaction) to make the change with others (a reset token consumed,
     * sessions ended). A new password also lifts a lock from failed sign-ins.
     */
    async setPasswordHash(userId: string, passwordHash: string, options: { db?: Db } = {}): Promise<void> {
      await store.updatePasswordHash(options.db ?? db, userId, passwordHash, clock());
    },

    /** The same password hashed anew (stronger parameters), only while `expected` is still the stored hash. `db`: in the caller's transaction (a sign-in's). */
    async replacePasswordHash(userId: string, expected: string, passwordHash: string, options: { db?: Db } = {}): Promise<boolean> {
      return store.replacePasswordHash(options.db ?? db, userId, expected, passwordHash, clock());
    },

    /**
     * Records that the user controls their address (the first time only). Pass the transaction
     * that consumes the token proving it. True when it was not verified before.
     */
    async markEmailVerified(userId: string, options: { db?: Db } = {}): Promise<boolean> {
      return store.markEmailVerified(options.db ?? db, userId, clock());
    },

    /**
     * Marks the name trusted for mails (the first time only) when the address is verified by its
     * link, whose mail tells whoever did not create the account to ignore it (the mail does not
     * show the name, so this trusts the verified owner, not a name they have seen).
     * A password reset proves the address too, but says nothing of a name a stranger may have
     * chosen at sign-up: it does not confirm it.
     */
    async confirmName(userId: string, options: { db?: Db } = {}): Promise<void> {
      await store.confirmName(options.db ?? db, userId, clock());
    },

    /**
     * Sets the language of the user's mails: a language they chose (only written when it differs
     * from the stored one), or with `onlyIfUnset` the language of a sign-in, kept only while the
     * account has none. Pass `options.db` to make it part of a transaction. True when it changed.
     */
    async setLocale(userId: string, locale: Locale, options: { db?: Db; onlyIfUnset?: boolean } = {}): Promise<boolean> {
      return store.updateLocale(options.db ?? db, userId, locale, { onlyIfUnset: options.onlyIfUnset ?? false });
    },

    /**
     * How many password hashes use each argon2 parameter set: a scan in short slices, for background
     * work (user.store.ts); null when `shouldStop` ended it early.
     */
    countPasswordHashParameters(options: { between?: () => Promise<void>; shouldStop?: () => boolean } = {}): Promise<Array<{ encoded: string; count: number }> | null> {
      return store.countPasswordHashParameters(db, options);
    },

    /** Whether any account exists (the start's banner): O(1), where `countUsers` reads every row. */
    async hasAnyUser(): Promise<boolean> {
      return store.hasAnyUser(db);
    },

    /** How many accounts; with a filter, how many of them are (not) disabled and meet other modules' conditions. */
    async countUsers(filter: Pick<store.UserListFilter, 'disabled' | 'conditions'> = {}): Promise<number> {
      return store.countUsers(db, filter);
    },

    /**
     * Users newest first (`oldestFirst`: oldest first), `limit` at a time; `query` is a search in the
     * syntax of `parseUserSearch` (the start of the address or of a word of the name by default,
     * `*text` anywhere, `"text"` exactly; case-insensitive); the filters narrow further. Pass the
     * previous page's `next` as `before` to continue. `search` is what the query asked for, as read
     * (null: nothing), for a page to say back.
     */
    async listUsers(
      filter: store.UserListFilter & { query?: string; before?: KeysetPosition; oldestFirst?: boolean; limit: number },
    ): Promise<{ users: User[]; next: KeysetPosition | null; search: UserSearch | null }> {
      const { query, limit, ...rest } = filter;
      const search = query === undefined ? null : parseUserSearch(query);
      const rows = await store.findUsers(db, {
        ...rest,
        ...(search !== null && { search: { match: search.match, scope: search.scope, name: search.text.toLowerCase(), email: normaliseEmail(search.text) } }),
        limit: limit + 1,
      });
      const { items, next } = toPage(rows, limit, (row) => ({ createdAt: row.created_at, id: row.id }));
      const roles = await store.findRolesByUserIds(db, items.map((row) => row.id));
      return { users: items.map((row) => toUserWithRoles(row, roles.get(row.id) ?? [])), next, search };
    },

    /** Users by id in one query (two for their roles); unknown ids are left out. */
    async findUsersByIds(ids: readonly string[]): Promise<User[]> {
      const rows = await store.findUsersByIds(db, [...new Set(ids)]);
      const roles = await store.findRolesByUserIds(db, rows.map((row) => row.id));
      return rows.map((row) => toUserWithRoles(row, roles.get(row.id) ?? []));
    },

    /**
     * Applies `changes` in one transaction. Disabling stamps `disabledAt`; enabling clears it.
     * When something changed, `onUpdated` runs inside the same transaction with its `db` (to record
     * the change, say): if it throws, nothing is changed.
     *
     * With `actingAdminId`, the change is made only while that user is still an enabled ADMIN
     * (ACTOR_NOT_ADMIN otherwise), judged inside the transaction. A change of roles or of the
     * disabled state first takes the lock of the ADMIN role's holders, so such changes run one at a
     * time and each judges its actor by what the previous one committed: two admins taking each
     * other's ADMIN role (or disabling each other) at once cannot both succeed, as they could when
     * each was judged only before its transaction began.
     */
    async updateUser(
      id: string,
      changes: UserChanges,
      options: { onUpdated?: (db: Db, change: UserChange) => Promise<void>; actingAdminId?: string; db?: Db } = {},
    ): Promise<UpdateUserResult> {
      const roles = changes.roles === undefined ? undefined : [...new Set(changes.roles)].sort();
      if (roles !== undefined && !roles.every(isValidRole)) return { ok: false, reason: 'INVALID_ROLE' };
      const { actingAdminId } = options;
      // With `db` (the caller's transaction: SCIM deprovisioning), the change commits or rolls back with the caller's.
      const within = (run: (trx: Db) => Promise<UpdateUserResult>) => (options.db === undefined ? db.transaction().execute(run) : run(options.db));
      return within(async (trx): Promise<UpdateUserResult> => {
        // First, before anything is read: see store.lockRoleHolders.
        if (roles !== undefined || changes.disabled !== undefined) await store.lockRoleHolders(trx, ADMIN_ROLE);
        if (actingAdminId !== undefined && !(await store.isEnabledHolder(trx, actingAdminId, ADMIN_ROLE))) return { ok: false, reason: 'ACTOR_NOT_ADMIN' };
        const row = await store.findUserById(trx, id);
        if (row === undefined) return { ok: false, reason: 'NOT_FOUND' };
        const before = await toUser(row, trx);
        const now = clock();
        const fields: { name?: string; name_confirmed_at?: number; disabled_at?: number | null } = {};
        const name = changes.name?.trim();
        // Only administrators change names (there is no self-service rename): a name set here is confirmed.
        if (name !== undefined && name !== row.name) Object.assign(fields, { name, name_confirmed_at: now });
        if (changes.disabled !== undefined && changes.disabled !== (row.disabled_at !== null)) fields.disabled_at = changes.disabled ? now : null;
        const isRolesChanged = roles !== undefined && roles.join(',') !== [...before.roles].sort().join(',');
        if (Object.keys(fields).length === 0 && !isRolesChanged) return { ok: true, user: before, before, after: before };

        if (isRolesChanged) await store.replaceRoles(trx, id, roles, now);
        await store.updateUserFields(trx, id, fields, now);
        const after = await toUser((await store.findUserById(trx, id))!, trx);
        await options.onUpdated?.(trx, { before, after });
        return { ok: true, user: after, before, after };
      });
    },

    /**
     * Deletes the user, in one transaction: the role holders are locked first (as for a role
     * change, so the last enabled ADMIN can never be deleted, however many admins act at once),
     * an acting admin must still be one, then `check` may refuse (a reason code, having written
     * nothing) or make the first changes (what must be judged under its own locks), `onDeleting` removes and records what other modules hold of the user, the row is
     * deleted (with everything that references it on cascade) and `onDeleted` records the event.
     */
    async deleteUser(
      id: string,
      options: {
        actingAdminId?: string;
        check?: (db: Db, user: User) => Promise<string | null>;
        onDeleting?: (db: Db, user: User) => Promise<void>;
        onDeleted?: (db: Db, user: User) => Promise<void>;
      } = {},
    ): Promise<DeleteUserResult> {
      return db.transaction().execute(async (trx): Promise<DeleteUserResult> => {
        await store.lockRoleHolders(trx, ADMIN_ROLE);
        if (options.actingAdminId !== undefined && !(await store.isEnabledHolder(trx, options.actingAdminId, ADMIN_ROLE))) return { ok: false, reason: 'ACTOR_NOT_ADMIN' };
        const row = await store.findUserById(trx, id);
        if (row === undefined) return { ok: false, reason: 'NOT_FOUND' };
        const user = await toUser(row, trx);
        if (user.disabledAt === null && user.roles.includes(ADMIN_ROLE) && (await store.countEnabledHolders(trx, ADMIN_ROLE)) <= 1) return { ok: false, reason: 'LAST_ADMIN' };
        const refusal = (await options.check?.(trx, user)) ?? null;
        if (refusal !== null) return { ok: false, reason: 'REFUSED', refusal };
        await options.onDeleting?.(trx, user);
        if (!(await store.deleteUser(trx, id))) return { ok: false, reason: 'NOT_FOUND' };
        await options.onDeleted?.(trx, user);
        return { ok: true, user };
      });
    },
  };
}

function toCredentials(row: UserRow): UserCredentials {
  return { id: row.id, passwordHash: row.password_hash, disabledAt: row.disabled_at, passwordLockedAt: row.password_locked_at };
}

function toUserWithRoles(row: UserRow, roles: string[]): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    roles,
    emailVerifiedAt: row.email_verified_at,
    nameConfirmedAt: row.name_confirmed_at,
    // A value no language of ours (written by hand, or a language since removed) reads as unknown.
    locale: toLocale(row.locale),
    disabledAt: row.disabled_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
