/** Queries on sessions. */
import type { Db } from '../storage/database.ts';
import type { SessionRow } from '../storage/schema.ts';

export async function insertSession(db: Db, row: SessionRow): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

export async function findSessionById(db: Db, id: string): Promise<SessionRow | undefined> {
  return db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
}
