/**
 * The SCIM store's writes that two requests may make at once. Group members are added with the
 * primary key deciding (insert or ignore), never by reading first and inserting after: between
 * the two, another transaction may add the same member, and its commit made the second insert a
 * unique violation (a 500). On PostgreSQL the test holds one transaction open while the other
 * waits on its row; SQLite runs one writing transaction at a time, so there it checks the
 * repeated addition.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { api, uniqueEmail } from '../organizations/organizations.test-helpers.ts';
import type { Db } from '../storage/database.ts';
import { addGroupMembers } from './scim.store.ts';

const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** An organization with one SCIM User and one empty Group; their ids. */
async function userAndGroup(t: TestApp): Promise<{ scimUserId: string; groupId: string }> {
  const owner = await createSignedInUser(t, { email: uniqueEmail('owner'), password: 'correct horse battery staple' });
  const created = await api(t, owner.token).post('/api/organizations', { name: 'Store Inc' });
  const organizationId = created.json().organization.id as string;
  const token = (await api(t, owner.token).post(`/api/organizations/${organizationId}/scim-tokens`, { name: 'Okta' })).json().token as string;
  const scim = async (url: string, body: unknown) => {
    const response = await t.app.inject({ method: 'POST', url: `/scim/v2${url}`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }, payload: JSON.stringify(body) });
    assert.equal(response.statusCode, 201, response.body);
    return response.json().id as string;
  };
  return { scimUserId: await scim('/Users', { userName: uniqueEmail('member') }), groupId: await scim('/Groups', { schemas: [GROUP], displayName: 'Store', members: [] }) };
}

/** Resolves once some PostgreSQL backend of this database waits on a lock (the second transaction, blocked by the first). */
async function untilOneWaitsOnALock(db: Db): Promise<void> {
  for (;;) {
    const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
    if (rows[0]!.waiting > 0) return;
    await nextTurn();
  }
}

for (const backend of await backends()) {
  describe(`SCIM store (${backend.name})`, { skip: backend.skip, timeout: 60_000 }, () => {
    const t = useTestApp(backend);
    const membersOf = (groupId: string) => t.services.storage.db.selectFrom('scim_group_members').select('scim_user_id').where('group_id', '=', groupId).execute();

    it('adds a member that is one already without failing (regression: concurrent group-member additions answered 500)', async () => {
      const { scimUserId, groupId } = await userAndGroup(t);
      const { db } = t.services.storage;
      if (backend.name === 'postgres') {
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let added!: () => void;
        const firstAdded = new Promise<void>((resolve) => (added = resolve));
        const first = db.transaction().execute(async (trx) => {
          await addGroupMembers(trx, groupId, [scimUserId]);
          added();
          await released;
        });
        await firstAdded;
        // The second reads (or inserts) before the first commits, then waits on its row.
        const second = db.transaction().execute((trx) => addGroupMembers(trx, groupId, [scimUserId]));
        await untilOneWaitsOnALock(db);
        release();
        await first;
        await second;
      } else {
        await db.transaction().execute((trx) => addGroupMembers(trx, groupId, [scimUserId]));
        await db.transaction().execute((trx) => addGroupMembers(trx, groupId, [scimUserId, scimUserId]));
      }
      assert.deepEqual(await membersOf(groupId), [{ scim_user_id: scimUserId }]);
    });
  });
}
