import { SqliteAdapter, sql, type Kysely } from 'kysely';
import { createIndexConcurrently } from '../../storage/migrations.ts';

/**
 * The admin organizations search (organizations.store.ts `listOrganizations`) finds, by default, a
 * word of the slug or of the name that starts with the text, and with a leading star either anywhere.
 * Before, it was a substring of both, which no index served: at a million organizations every
 * search read the table. On PostgreSQL:
 * - the slug's start is a B-tree walk in byte order: the unique index on `slug` follows the
 *   database's collation, which serves a LIKE prefix only when it is `C`, and `datcollate` does not
 *   say so when the collation comes from ICU; so the slug gets an index of its own in
 *   `text_pattern_ops` (small: slugs are short);
 * - a later word's start, and a substring of either, are served by trigram GIN indexes, made
 *   where the users search's migration could install pg_trgm (20261130-users-search-trigram, which
 *   runs before this one); without it those conditions read the table, as before.
 * SQLite walks the `(created_at)` index at the sizes it serves.
 *
 * Built concurrently, outside a transaction (storage/migrations.ts `applyMigrations`): at a million
 * organizations a trigram index takes a while, and the organizations keep taking writes meanwhile.
 */
export const transaction = false;

export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await createIndexConcurrently(db, 'organizations_slug_prefix_idx', 'organizations', sql`(slug text_pattern_ops)`);
  const { rows } = await sql<{ installed: boolean }>`select exists (select 1 from pg_extension where extname = 'pg_trgm') as installed`.execute(db);
  if (rows[0]?.installed !== true) return;
  await createIndexConcurrently(db, 'organizations_name_trgm_idx', 'organizations', sql`using gin (lower(name) gin_trgm_ops)`);
  await createIndexConcurrently(db, 'organizations_slug_trgm_idx', 'organizations', sql`using gin (slug gin_trgm_ops)`);
}

/** Plain drops: a rollback runs in a transaction, and dropping an index is quick. */
export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop index if exists organizations_slug_trgm_idx`.execute(db);
  await sql`drop index if exists organizations_name_trgm_idx`.execute(db);
  await sql`drop index if exists organizations_slug_prefix_idx`.execute(db);
}
