/**
 * The conditional session insert on PostgreSQL, against a change that is still uncommitted when
 * the insert runs: the insert must wait for it (FOR SHARE on the user's row), then see its result.
 * Without the lock it reads the last committed row, passes, and writes a session that the
 * change's "end every session" (run before its commit) can no longer see.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { insertSessionIfCurrent } from './session.store.ts';

const postgres = (await backends()).find((backend) => backend.name === 'postgres')!;

describe('a session insert waits for an uncommitted change of its user (PostgreSQL)', { skip: postgres.skip }, () => {
  const t = useTestApp(postgres);

  it('is not written when the password changes in a transaction that was open while it ran', async () => {
    const user = await createUser(t.services, { email: 'locked-row@example.com', password: 'correct horse battery staple' });
    const { passwordHash } = (await t.services.users.findCredentialsById(user.id))!;
    const change = new pg.Client({ connectionString: t.database.url });
    await change.connect();
    try {
      await change.query('begin');
      await change.query('update users set password_hash = $1 where id = $2', ['$argon2id$v=19$m=19456,t=2,p=1$changed', user.id]);

      const now = Date.now();
      let isSettled = false;
      const insert = insertSessionIfCurrent(
        t.services.storage.db,
        true,
        { id: 'racing-session-0001', user_id: user.id, refresh_seed: 'seed', created_at: now, expires_at: now + 60_000, ip: null, user_agent: null, amr: 'pwd' },
        passwordHash!,
      ).finally(() => (isSettled = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(isSettled, false, 'the insert waits for the open change');

      // The change ends every session it can see, then commits.
      const { rows } = await change.query('select id from sessions where user_id = $1', [user.id]);
      assert.deepEqual(rows, []);
      await change.query('commit');

      assert.equal(await insert, false, 'the insert saw the committed change and wrote nothing');
      const left = await t.services.storage.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute();
      assert.deepEqual(left, []);
    } finally {
      await change.query('rollback').catch(() => {});
      await change.end();
    }
  });
});
