import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * The admin users search finds a substring of the address or of the lower-cased name
 * (`like '%text%'`), which no B-tree serves: on PostgreSQL, trigram GIN indexes (pg_trgm) do, so
 * a search for one address reads the few rows that hold its trigrams instead of walking the
 * `(created_at, id)` index through millions of users. pg_trgm ships with PostgreSQL and is a
 * trusted extension: a role that may create objects in the database may install it. Where it
 * cannot be installed (a role without that right, a build without contrib) the indexes are left
 * out and the search still works, walking the users in order (docs/operations/performance.md).
 * SQLite has no such index: its search walks the `(created_at, id)` index, which is fine at the
 * sizes SQLite serves.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  const { rows } = await sql<{ installed: boolean; creatable: boolean }>`
    select exists (select 1 from pg_extension where extname = 'pg_trgm') as installed,
           exists (select 1 from pg_available_extension_versions v
                    where v.name = 'pg_trgm' and v.installed = false
                      and ((select rolsuper from pg_roles where rolname = current_user)
                           or (v.trusted and has_database_privilege(current_database(), 'CREATE')))) as creatable`.execute(db);
  const { installed, creatable } = rows[0]!;
  if (!installed && !creatable) return;
  if (!installed) await sql`create extension if not exists pg_trgm`.execute(db);
  await sql`create index users_email_trgm_idx on users using gin (email gin_trgm_ops)`.execute(db);
  await sql`create index users_name_trgm_idx on users using gin (lower(name) gin_trgm_ops)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  await sql`drop index if exists users_name_trgm_idx`.execute(db);
  await sql`drop index if exists users_email_trgm_idx`.execute(db);
}
