/**
 * The active organization and the `org` claim, with both session strategies on every backend:
 * activating answers with a token that carries `org: {id, slug, roles}` (and `GET
 * /api/auth/session` shows it); clearing removes it; a member removed from the organization loses
 * it at once in the database strategy and at the next refresh in the jwt strategy, as role
 * changes do. Also the last-OWNER rule under concurrency: two OWNERs demoting, removing each other
 * or leaving at once through the real API leave exactly one OWNER.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { api, assertError, uniqueEmail } from './organizations.test-helpers.ts';
import { OPERATOR } from './organizations.service.ts';

const PASSWORD = 'correct horse battery staple';

async function signIn(t: TestApp, label: string) {
  const email = uniqueEmail(label);
  const user = await createUser(t.services, { email, password: PASSWORD });
  const response = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } });
  assert.equal(response.statusCode, 200, response.body);
  const { token, refreshToken } = response.json() as { token: string; refreshToken: string };
  return { id: user.id, email, token, refreshToken, api: api(t, token) };
}

const sessionClaims = async (t: TestApp, token: string) => {
  const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { claims?: Record<string, unknown> }).claims ?? {};
};

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`the org claim (${backend.name}, SESSION_STRATEGY=${strategy})`, { skip: backend.skip, timeout: 120_000 }, () => {
      const t = useTestApp(backend, { env: { SESSION_STRATEGY: strategy } });

      it('activating gives a token with org; removal takes it away (database: at once; jwt: at the next refresh)', async () => {
        const owner = await signIn(t, 'claim-owner');
        const created = await owner.api.post('/api/organizations', { name: 'Claims Co' });
        const organization = created.json().organization as { id: string; slug: string };
        assert.equal(decodeJwt(owner.token).org, undefined, 'no active organization yet');

        const activated = await owner.api.post(`/api/organizations/${organization.id}/activate`);
        assert.equal(activated.statusCode, 200, activated.body);
        assert.equal(activated.json().organization.isActive, true);
        const ownerToken = activated.json().token as string;
        assert.deepEqual(decodeJwt(ownerToken).org, { id: organization.id, slug: organization.slug, roles: ['OWNER'] });
        assert.deepEqual((await sessionClaims(t, ownerToken)).org, { id: organization.id, slug: organization.slug, roles: ['OWNER'] });
        assert.equal((await api(t, ownerToken).get('/api/organizations')).json().organizations[0].isActive, true);

        // A member activates through the other endpoint; a refresh keeps the claim.
        const member = await signIn(t, 'claim-member');
        await t.services.organizations.addMember(organization.id, member.id, 'MEMBER', { actorUserId: null, ip: null, userAgent: null });
        const memberActive = await member.api.post('/api/organizations/active', { organizationId: organization.id });
        assert.equal(memberActive.statusCode, 200, memberActive.body);
        const memberToken = memberActive.json().token as string;
        assert.deepEqual(decodeJwt(memberToken).org, { id: organization.id, slug: organization.slug, roles: ['MEMBER'] });
        const refreshed = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: member.refreshToken } });
        assert.equal(refreshed.statusCode, 200, refreshed.body);
        assert.deepEqual(decodeJwt(refreshed.json().token).org, { id: organization.id, slug: organization.slug, roles: ['MEMBER'] });

        // A role change shows in the next token.
        await api(t, ownerToken).patch(`/api/organizations/${organization.id}/members/${member.id}`, { role: 'ADMIN' });
        const second = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: refreshed.json().refreshToken } });
        assert.deepEqual((decodeJwt(second.json().token).org as { roles: string[] }).roles, ['ADMIN']);

        // Removal.
        assert.equal((await api(t, ownerToken).delete(`/api/organizations/${organization.id}/members/${member.id}`)).statusCode, 200);
        if (strategy === 'database') {
          assert.equal((await sessionClaims(t, memberToken)).org, undefined, 'database: gone at once');
        } else {
          assert.deepEqual(((await sessionClaims(t, memberToken)).org as { id: string }).id, organization.id, 'jwt: the token still says so until it is refreshed');
        }
        const third = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: second.json().refreshToken } });
        assert.equal(third.statusCode, 200, third.body);
        assert.equal(decodeJwt(third.json().token).org, undefined, 'gone from the next token');
        assert.equal((await sessionClaims(t, third.json().token)).org, undefined);
        // Nor can it be made active again.
        assertError(await api(t, third.json().token).post(`/api/organizations/${organization.id}/activate`), 404, 'ORGANIZATION_NOT_FOUND');

        // Clearing.
        const cleared = await api(t, ownerToken).post('/api/organizations/active', { organizationId: null });
        assert.equal(cleared.statusCode, 200, cleared.body);
        assert.equal(cleared.json().organization, null);
        assert.equal(decodeJwt(cleared.json().token).org, undefined);
        // A deleted organization's claim is gone too.
        const again = await api(t, ownerToken).post('/api/organizations/active', { organizationId: organization.id });
        assert.ok(decodeJwt(again.json().token).org);
        await api(t, ownerToken).delete(`/api/organizations/${organization.id}`);
        const afterDelete = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: owner.refreshToken } });
        assert.equal(decodeJwt(afterDelete.json().token).org, undefined);
      });

      it('a cookie session gets the new token as its access cookie', async () => {
        const owner = await signIn(t, 'cookie-owner');
        const organization = (await owner.api.post('/api/organizations', { name: 'Cookie Co' })).json().organization as { id: string };
        const browser = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: owner.email, password: PASSWORD } });
        assert.equal(browser.statusCode, 200, browser.body);
        const cookies = new Map(browser.cookies.map((c) => [c.name, c.value]));
        const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: [...cookies].map(([n, v]) => `${n}=${v}`).join('; ') } });
        for (const c of csrf.cookies) cookies.set(c.name, c.value);
        const activated = await t.app.inject({
          method: 'POST',
          url: `/api/organizations/${organization.id}/activate`,
          headers: { cookie: [...cookies].map(([n, v]) => `${n}=${v}`).join('; '), origin: t.config.authUrl, 'x-csrf-token': csrf.json().csrfToken, 'content-type': 'application/json' },
          payload: '{}',
        });
        assert.equal(activated.statusCode, 200, activated.body);
        const access = activated.cookies.find((c) => c.name.endsWith('gatehouse.session'));
        assert.ok(access, 'the access cookie is replaced');
        assert.equal(access.value, activated.json().token);
        assert.equal((decodeJwt(access.value).org as { id: string }).id, organization.id);
      });
    });
  }

  describe(`the last OWNER under concurrency (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const t = useTestApp(backend);

    async function twoOwners() {
      const first = await signIn(t, 'owner-a');
      const second = await signIn(t, 'owner-b');
      const organization = (await first.api.post('/api/organizations', { name: 'Two Owners' })).json().organization as { id: string };
      await t.services.organizations.addMember(organization.id, second.id, 'OWNER', { actorUserId: null, ip: null, userAgent: null });
      return { first, second, base: `/api/organizations/${organization.id}`, id: organization.id };
    }

    /** Exactly one succeeds; the other is refused (LAST_OWNER, or, demoted first, no longer allowed); one OWNER remains. */
    async function assertOneOwnerLeft(id: string, statuses: number[], codes: string[], label: string) {
      assert.equal(statuses.filter((status) => status === 200).length, 1, `${label}: exactly one succeeds (${codes.join(', ')})`);
      assert.ok(codes.includes('LAST_OWNER') || codes.includes('ORGANIZATION_ROLE_REQUIRED'), `${label}: ${codes.join(', ')}`);
      const members = (await t.services.organizations.listMembers(id, OPERATOR)) ?? [];
      assert.equal(members.filter((member) => member.role === 'OWNER').length, 1, `${label}: one OWNER remains`);
    }

    for (let round = 1; round <= 3; round++) {
      it(`two OWNERs demoting each other at once leave one OWNER (round ${round})`, async () => {
        const { first, second, base, id } = await twoOwners();
        const results = await Promise.all([first.api.patch(`${base}/members/${second.id}`, { role: 'MEMBER' }), second.api.patch(`${base}/members/${first.id}`, { role: 'MEMBER' })]);
        await assertOneOwnerLeft(id, results.map((r) => r.statusCode), results.map((r) => (r.statusCode === 200 ? 'ok' : r.json().error)), 'demote');
      });

      it(`two OWNERs demoting themselves at once leave one OWNER (round ${round})`, async () => {
        const { first, second, base, id } = await twoOwners();
        const results = await Promise.all([first.api.patch(`${base}/members/${first.id}`, { role: 'ADMIN' }), second.api.patch(`${base}/members/${second.id}`, { role: 'ADMIN' })]);
        const codes = results.map((r) => (r.statusCode === 200 ? 'ok' : r.json().error));
        await assertOneOwnerLeft(id, results.map((r) => r.statusCode), codes, 'self-demote');
        assert.ok(codes.includes('LAST_OWNER'), 'the second sees the first\'s change and is refused LAST_OWNER');
      });

      it(`two OWNERs removing each other at once leave one OWNER (round ${round})`, async () => {
        const { first, second, base, id } = await twoOwners();
        const results = await Promise.all([first.api.delete(`${base}/members/${second.id}`), second.api.delete(`${base}/members/${first.id}`)]);
        const statuses = results.map((r) => r.statusCode);
        // The loser is either refused (LAST_OWNER) or no longer a member at all (404): one OWNER stays either way.
        assert.equal(statuses.filter((s) => s === 200).length, 1, `remove: ${results.map((r) => r.body).join(' | ')}`);
        const members = (await t.services.organizations.list({ limit: 500 })).find((o) => o.id === id);
        assert.equal(members?.memberCount, 1);
      });

      it(`two OWNERs leaving at once leave one OWNER (round ${round})`, async () => {
        const { first, second, base, id } = await twoOwners();
        const results = await Promise.all([first.api.post(`${base}/leave`), second.api.post(`${base}/leave`)]);
        const codes = results.map((r) => (r.statusCode === 200 ? 'ok' : r.json().error));
        await assertOneOwnerLeft(id, results.map((r) => r.statusCode), codes, 'leave');
        assert.ok(codes.includes('LAST_OWNER'), 'leave: LAST_OWNER');
      });
    }
  });
}
