import type { Kysely } from 'kysely';

/**
 * How each client came to be, and when it was last used:
 * - `origin`: `admin` (the admin API or pages), `cli` (`gatehouse clients create`), `registration`
 *   (RFC 7591 with the initial access token) or `open_registration` (RFC 7591 by anyone, in open
 *   mode: counted against the cap, and deleted when never used). Clients from before this migration
 *   take theirs from the audit log's `oidc_client.created` (its `details.via`), else `admin`.
 * - `last_used_at`: epoch ms of the last code or token the provider issued to it (written at most
 *   once an hour per client); null: never since this migration.
 * The index serves the cap's count and the expiry's search, both by origin.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').addColumn('origin', 'varchar(32)', (c) => c.notNull().defaultTo('admin')).execute();
  await db.schema.alterTable('oidc_clients').addColumn('last_used_at', 'bigint').execute();
  await db.schema.createIndex('oidc_clients_origin_created_at_idx').on('oidc_clients').columns(['origin', 'created_at']).execute();

  const tables = await db.introspection.getTables();
  if (!tables.some((table) => table.name === 'audit_events')) return;
  const typed = db as unknown as Kysely<{ audit_events: { type: string; details: string | null }; oidc_clients: { id: string; origin: string } }>;
  const created = await typed.selectFrom('audit_events').select('details').where('type', '=', 'oidc_client.created').execute();
  for (const { details } of created) {
    let parsed: { clientId?: unknown; via?: unknown } = {};
    try {
      parsed = JSON.parse(details ?? '{}') as typeof parsed;
    } catch {
      continue;
    }
    const origin = parsed.via === 'cli' ? 'cli' : parsed.via === 'registration' ? 'registration' : null;
    if (origin === null || typeof parsed.clientId !== 'string') continue;
    await typed.updateTable('oidc_clients').set({ origin }).where('id', '=', parsed.clientId).execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('oidc_clients_origin_created_at_idx').execute();
  await db.schema.alterTable('oidc_clients').dropColumn('last_used_at').execute();
  await db.schema.alterTable('oidc_clients').dropColumn('origin').execute();
}
