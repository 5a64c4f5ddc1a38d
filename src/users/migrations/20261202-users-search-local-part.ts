import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * A search for text holding an `@` (a whole address, or its end and the domain's start) asked the
 * address's trigram index for every trigram of the text, the domain's too: `exa`, `com` and the
 * like are in nearly every row, so at 10,000,000 users the index read their posting lists whole
 * (perf/analysis.md, growth). The local part gets a trigram index of its own: the search asks it for
 * the text before the `@` (a suffix of the local part, whose trigrams are rare) and checks the whole
 * text on the few rows it finds (`users/user.store.ts`, `selectUsers`). Made only where the earlier
 * migration could install pg_trgm; SQLite has no such index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  const { rows } = await sql<{ installed: boolean }>`select exists (select 1 from pg_extension where extname = 'pg_trgm') as installed`.execute(db);
  if (rows[0]?.installed !== true) return;
  await sql`create index users_email_local_trgm_idx on users using gin (split_part(email, '@', 1) gin_trgm_ops)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop index if exists users_email_local_trgm_idx`.execute(db);
}
