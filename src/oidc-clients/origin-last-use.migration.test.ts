/**
 * The migration 20261130-oidc-clients-origin-last-use, on SQLite and PostgreSQL: clients from
 * before it take their origin from the audit log's `oidc_client.created` (`details.via`), else
 * `admin`; none has a last use; `down` goes back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { withDatabaseBefore } from '../../test/helpers/migration-db.ts';
import { migrateToLatest } from '../modules.ts';
import * as originLastUse from './migrations/20261130-oidc-clients-origin-last-use.ts';

const MIGRATION = '20261130-oidc-clients-origin-last-use';

for (const backend of await backends()) {
  describe(`${MIGRATION} (${backend.name})`, { skip: backend.skip }, () => {
    it('gives earlier clients the origin their audit event names (else admin) and no last use; down removes both', async () => {
      await withDatabaseBefore(backend, MIGRATION, async (db) => {
        const now = Date.now();
        for (const id of ['by-cli', 'by-registration', 'by-admin', 'unaudited']) {
          await sql`insert into oidc_clients (id, name, secret_hash, redirect_uris, post_logout_redirect_uris, grant_types, public, first_party, id_token_signed_response_alg, created_at, updated_at)
                    values (${id}, ${id}, null, '[]', '[]', '["client_credentials"]', 0, 0, 'EdDSA', ${now}, ${now})`.execute(db);
        }
        const audited = [
          ['by-cli', { clientId: 'by-cli', via: 'cli' }],
          ['by-registration', { clientId: 'by-registration', via: 'registration' }],
          ['by-admin', { clientId: 'by-admin' }],
          ['garbled', null],
        ] as const;
        for (const [id, details] of audited) {
          await sql`insert into audit_events (id, type, details, created_at) values (${`event-${id}`}, 'oidc_client.created', ${details === null ? '{not json' : JSON.stringify(details)}, ${now})`.execute(db);
        }

        const applied = await migrateToLatest(db);
        assert.deepEqual(applied.results?.map((result) => result.migrationName), [MIGRATION]);
        const rows = await db.selectFrom('oidc_clients').select(['id', 'origin', 'last_used_at']).orderBy('id').execute();
        assert.deepEqual(rows, [
          { id: 'by-admin', origin: 'admin', last_used_at: null },
          { id: 'by-cli', origin: 'cli', last_used_at: null },
          { id: 'by-registration', origin: 'registration', last_used_at: null },
          { id: 'unaudited', origin: 'admin', last_used_at: null },
        ]);

        await originLastUse.down(db as unknown as Kysely<unknown>);
        const columns = (await db.introspection.getTables()).find((table) => table.name === 'oidc_clients')!.columns.map((column) => column.name);
        assert.ok(!columns.includes('origin') && !columns.includes('last_used_at'), columns.join(', '));
      });
    });
  });
}
