/**
 * The migration 20261130-oidc-clients-token-exchange, on SQLite and PostgreSQL: clients from
 * before it have an empty exchange policy (they may not exchange), and `down` removes the column.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { withDatabaseBefore } from '../../test/helpers/migration-db.ts';
import { migrateToLatest } from '../modules.ts';
import * as tokenExchange from './migrations/20261130-oidc-clients-token-exchange.ts';

const MIGRATION = '20261130-oidc-clients-token-exchange';

for (const backend of await backends()) {
  describe(`${MIGRATION} (${backend.name})`, { skip: backend.skip }, () => {
    it('gives earlier clients no exchange policy; down removes the column', async () => {
      await withDatabaseBefore(backend, MIGRATION, async (db) => {
        const now = Date.now();
        await sql`insert into oidc_clients (id, name, secret_hash, redirect_uris, post_logout_redirect_uris, grant_types, public, first_party, id_token_signed_response_alg, created_at, updated_at)
                  values ('earlier', 'Earlier', null, '[]', '[]', '["client_credentials"]', 0, 0, 'EdDSA', ${now}, ${now})`.execute(db);

        const applied = await migrateToLatest(db);
        assert.deepEqual(applied.results?.map((result) => result.migrationName), [MIGRATION]);
        assert.deepEqual(await db.selectFrom('oidc_clients').select(['id', 'exchange_resources']).execute(), [{ id: 'earlier', exchange_resources: '[]' }]);

        await tokenExchange.down(db as unknown as Kysely<unknown>);
        const columns = (await db.introspection.getTables()).find((table) => table.name === 'oidc_clients')!.columns.map((column) => column.name);
        assert.ok(!columns.includes('exchange_resources'), columns.join(', '));
      });
    });
  });
}
