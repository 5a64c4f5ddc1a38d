import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * The admin users search matches the start of an address by default (`users/user-search.ts`):
 * `email like 'text%'`, which a B-tree walks in O(log n) at any size. PostgreSQL uses a B-tree for
 * a `LIKE` prefix only when its order is the byte order: the unique index on `email` follows the
 * database's collation, so unless that is `C` (or `POSIX`) the prefix gets an index of its own in
 * `text_pattern_ops`. SQLite serves the sizes it is for by walking the `(created_at, id)` index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  const { rows } = await sql<{ collation: string }>`select datcollate as collation from pg_database where datname = current_database()`.execute(db);
  if (rows[0]?.collation === 'C' || rows[0]?.collation === 'POSIX') return;
  await sql`create index users_email_prefix_idx on users (email text_pattern_ops)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop index if exists users_email_prefix_idx`.execute(db);
}
