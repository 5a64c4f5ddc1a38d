/** Queries on users and their roles. No logic: the service decides, the store reads and writes. */
import type { Db } from '../storage/database.ts';
import type { NewUserRow, UserRow } from '../storage/schema.ts';

export async function insertUserWithRoles(db: Db, user: NewUserRow, roles: readonly string[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('users').values(user).execute();
    if (roles.length > 0) {
      await trx
        .insertInto('user_roles')
        .values(roles.map((role) => ({ user_id: user.id, role, created_at: user.created_at })))
        .execute();
    }
  });
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findRolesByUserId(db: Db, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('user_roles').select('role').where('user_id', '=', userId).orderBy('role').execute();
  return rows.map((row) => row.role);
}

export async function updatePasswordHash(db: Db, userId: string, passwordHash: string, updatedAt: number): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash, updated_at: updatedAt }).where('id', '=', userId).execute();
}

export async function countUsers(db: Db): Promise<number> {
  const row = await db.selectFrom('users').select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}
