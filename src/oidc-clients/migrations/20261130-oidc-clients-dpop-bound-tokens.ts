import type { Kysely } from 'kysely';

/**
 * DPoP required per client (RFC 9449 §5.2, `dpop_bound_access_tokens`): 1 when the client's token
 * requests must carry a DPoP proof, so that every token it gets is bound to its key. 0 (every
 * client before this migration): DPoP is the client's choice.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').addColumn('dpop_bound_access_tokens', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').dropColumn('dpop_bound_access_tokens').execute();
}
