/**
 * Finding: "jwt strategy: a demoted ADMIN undoes its own demotion". Once ADMIN is taken from a
 * user, the token they still hold must not reach the admin API or pages, in either strategy,
 * although it stays valid for everything else until it expires.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`a demoted ADMIN cannot use or undo the demotion (${strategy} strategy, ${backend.name})`, { skip: backend.skip }, () => {
      const t = useTestApp(backend, { env: { SESSION_STRATEGY: strategy } });
      let count = 0;

      const newAdmin = () => createSignedInUser(t, { email: `admin${++count}@example.com`, password: PASSWORD, roles: ['ADMIN'] });

      const call = (method: 'GET' | 'PATCH', url: string, token: string, payload?: object) =>
        t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload && { payload }) });

      it('the demoted token gets 403 from the admin API and pages at once, and cannot restore ADMIN or demote the demoter', async () => {
        const demoter = await newAdmin();
        const demoted = await newAdmin();
        assert.equal((await call('GET', '/api/admin/users', demoted.token)).statusCode, 200, 'an ADMIN before');

        const demotion = await call('PATCH', `/api/admin/users/${demoted.id}`, demoter.token, { roles: [] });
        assert.equal(demotion.statusCode, 200, demotion.body);

        const list = await call('GET', '/api/admin/users', demoted.token);
        assert.equal(list.statusCode, 403, list.body);
        assert.equal(list.json().error, 'FORBIDDEN');
        const restore = await call('PATCH', `/api/admin/users/${demoted.id}`, demoted.token, { roles: ['ADMIN'] });
        assert.equal(restore.statusCode, 403, restore.body);
        const revenge = await call('PATCH', `/api/admin/users/${demoter.id}`, demoted.token, { roles: [] });
        assert.equal(revenge.statusCode, 403, revenge.body);
        const page = await call('GET', '/admin', demoted.token);
        assert.equal(page.statusCode, 403, 'the admin pages refuse it too');

        const roles = async (id: string) => (await call('GET', `/api/admin/users/${id}`, demoter.token)).json().user.roles;
        assert.deepEqual(await roles(demoted.id), [], 'the demotion holds');
        assert.deepEqual(await roles(demoter.id), ['ADMIN'], 'the demoter is untouched');

        // The token still signs its holder in elsewhere: only the role's powers are gone.
        const session = await call('GET', '/api/auth/session', demoted.token);
        assert.equal(session.statusCode, 200, session.body);
      });

      it('a token of a disabled ADMIN reaches nothing in the admin area', async () => {
        const admin = await newAdmin();
        const other = await newAdmin();
        const disabled = await call('PATCH', `/api/admin/users/${other.id}`, admin.token, { disabled: true });
        assert.equal(disabled.statusCode, 200, disabled.body);
        const response = await call('GET', '/api/admin/users', other.token);
        assert.equal(response.statusCode, 401, response.body);
      });
    });
  }
}
