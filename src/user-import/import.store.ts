/**
 * The bulk writes of `gatehouse import` and the reads of `gatehouse export users` and `import
 * hashes`: a batch of users and their roles in one transaction, keyed by the normalised address.
 * Users are written here directly, not one by one through the users service: a million
 * transactions would take hours. The rows are those the service writes (users, user_roles).
 */
import { sql } from 'kysely';
import type { Db } from '../storage/database.ts';
import type { UserRow } from '../storage/schema.ts';
import { randomId } from '../lib/random.ts';
import type { ImportRow } from './import-record.ts';

export async function findIdsByEmail(db: Db, emails: readonly string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map();
  const rows = await db.selectFrom('users').select(['id', 'email']).where('email', 'in', emails).execute();
  return new Map(rows.map((row) => [row.email, row.id]));
}

/** Inserts `created` and replaces what the export says of `updated` (their roles become the export's), in one transaction. */
export async function writeBatch(db: Db, created: readonly ImportRow[], updated: ReadonlyArray<{ id: string; row: ImportRow }>, now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (created.length > 0) {
      const users = created.map((row) => ({ id: randomId(), row }));
      await trx
        .insertInto('users')
        .values(
          users.map(({ id, row }) => {
            const createdAt = row.createdAt ?? now;
            return {
              id,
              email: row.email,
              name: row.name,
              password_hash: row.passwordHash,
              email_verified_at: row.emailVerified ? createdAt : null,
              // The old system had the name from its owner (or an administrator): mails may greet with it once the address is verified.
              name_confirmed_at: row.emailVerified && row.name !== '' ? createdAt : null,
              locale: null,
              disabled_at: row.disabled ? now : null,
              password_locked_at: null,
              created_at: createdAt,
              updated_at: now,
            };
          }),
        )
        .execute();
      const roles = users.flatMap(({ id, row }) => row.roles.map((role) => ({ user_id: id, role, created_at: now })));
      if (roles.length > 0) await trx.insertInto('user_roles').values(roles).execute();
    }
    for (const { id, row } of updated) {
      await trx
        .updateTable('users')
        .set({
          name: row.name,
          password_hash: row.passwordHash,
          email_verified_at: row.emailVerified ? sql<number>`coalesce(email_verified_at, ${now})` : null,
          disabled_at: row.disabled ? sql<number>`coalesce(disabled_at, ${now})` : null,
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
      await trx.deleteFrom('user_roles').where('user_id', '=', id).execute();
      if (row.roles.length > 0) await trx.insertInto('user_roles').values(row.roles.map((role) => ({ user_id: id, role, created_at: now }))).execute();
    }
  });
}

export type ExportedUser = Pick<UserRow, 'id' | 'email' | 'name' | 'password_hash' | 'email_verified_at' | 'disabled_at' | 'created_at'>;

/** Users in id order, `limit` after `afterId` (keyset: constant memory over any number). */
export async function findUsersAfter(db: Db, afterId: string, limit: number): Promise<Array<ExportedUser & { roles: string[] }>> {
  const users = await db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'password_hash', 'email_verified_at', 'disabled_at', 'created_at'])
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  if (users.length === 0) return [];
  const roles = await db.selectFrom('user_roles').select(['user_id', 'role']).where('user_id', 'in', users.map((user) => user.id)).orderBy('role').execute();
  const byUser = new Map<string, string[]>();
  for (const { user_id, role } of roles) (byUser.get(user_id) ?? byUser.set(user_id, []).get(user_id)!).push(role);
  return users.map((user) => ({ ...user, roles: byUser.get(user.id) ?? [] }));
}

/** How many stored password hashes are of each kind (by prefix), and how many accounts have none. */
export async function countHashKinds(db: Db): Promise<Array<{ kind: string; count: number }>> {
  const kind = sql<string>`case
    when password_hash is null then 'none'
    when password_hash like '$argon2id$%' then 'argon2id'
    when password_hash like '$argon2i$%' then 'argon2i'
    when password_hash like '$argon2d$%' then 'argon2d'
    when password_hash like '$2%' then 'bcrypt'
    when password_hash like '$scrypt$%' then 'scrypt'
    when password_hash like '$firebase-scrypt$%' then 'firebase-scrypt'
    when password_hash like '$pbkdf2-sha1$%' then 'pbkdf2-sha1'
    when password_hash like '$pbkdf2-sha256$%' then 'pbkdf2-sha256'
    when password_hash like '$pbkdf2-sha512$%' then 'pbkdf2-sha512'
    when password_hash like '$sha256$%' then 'sha256'
    when password_hash like '$sha512$%' then 'sha512'
    else 'unknown' end`;
  const rows = await db.selectFrom('users').select([kind.as('kind'), sql<string | number>`count(*)`.as('count')]).groupBy(kind).orderBy('kind').execute();
  return rows.map((row) => ({ kind: row.kind, count: Number(row.count) }));
}
