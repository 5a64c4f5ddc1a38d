/**
 * The organizations API end to end on every backend: create, list, show, rename, members, roles,
 * remove, leave, transfer, delete; the permission refusals (non-members get 404, never 403); the
 * creation policy; the audit events (domain events) and what they never carry.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, createUser, useTestApp } from '../../test/helpers/app.ts';
import { api, assertError, uniqueEmail } from './organizations.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  describe(`organizations API (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const t = useTestApp(backend);

    async function person(label: string) {
      const email = uniqueEmail(label);
      const user = await createSignedInUser(t, { email, password: PASSWORD });
      return { ...user, api: api(t, user.token) };
    }

    async function organizationWith(owner: { api: ReturnType<typeof api> }, name: string) {
      const response = await owner.api.post('/api/organizations', { name });
      assert.equal(response.statusCode, 201, response.body);
      return response.json().organization as { id: string; slug: string; name: string; role: string };
    }

    it('creates an organization, its creator OWNER, with a slug made from the name, and lists it', async () => {
      const owner = await person('owner');
      const organization = await organizationWith(owner, 'Ünïcode Café & Co');
      assert.equal(organization.role, 'OWNER');
      assert.match(organization.slug, /^unicode-cafe-co(-[a-z0-9]{6})?$/);
      const again = await organizationWith(owner, 'Ünïcode Café & Co');
      assert.notEqual(again.slug, organization.slug, 'a taken generated slug gets a suffix');
      const list = await owner.api.get('/api/organizations');
      assert.equal(list.statusCode, 200);
      assert.deepEqual(list.json().organizations.map((o: { id: string }) => o.id).sort(), [organization.id, again.id].sort());
      const shown = await owner.api.get(`/api/organizations/${organization.id}`);
      assert.equal(shown.statusCode, 200);
      assert.equal(shown.json().role, 'OWNER');
      const events = (await t.services.audit.listEvents({ type: 'organization.created', limit: 50 })).events;
      const created = events.find((event) => event.details?.organizationId === organization.id);
      assert.ok(created);
      assert.equal(created.userId, owner.id);
      assert.equal(created.details?.slug, organization.slug);
    });

    it('refuses a taken or invalid slug, and an invalid name', async () => {
      const owner = await person('slug');
      const slug = `acme-${Date.now()}`;
      await owner.api.post('/api/organizations', { name: 'Acme', slug });
      assertError(await owner.api.post('/api/organizations', { name: 'Acme 2', slug }), 409, 'SLUG_TAKEN');
      assertError(await owner.api.post('/api/organizations', { name: 'Acme', slug: 'Not A Slug' }), 422, 'VALIDATION_ERROR');
      assertError(await owner.api.post('/api/organizations', { name: 'bad\u202ename' }), 422, 'VALIDATION_ERROR');
      assertError(await owner.api.post('/api/organizations', { name: '' }), 422, 'VALIDATION_ERROR');
    });

    it('refuses creation to an unverified user by default (ALLOW_ORGANIZATION_CREATION=verified)', async () => {
      const email = uniqueEmail('unverified');
      await createUser(t.services, { email, password: PASSWORD });
      await t.services.storage.db.updateTable('users').set({ email_verified_at: null }).where('email', '=', email).execute();
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } });
      assert.equal(signIn.statusCode, 200, signIn.body);
      assertError(await api(t, signIn.json().token).post('/api/organizations', { name: 'Nope' }), 403, 'ORGANIZATION_CREATION_DISABLED');
    });

    it('hides an organization from non-members (404, never 403) and enforces the roles', async () => {
      const owner = await person('owner');
      const admin = await person('admin');
      const member = await person('member');
      const stranger = await person('stranger');
      const organization = await organizationWith(owner, 'Roles Inc');
      const base = `/api/organizations/${organization.id}`;
      await t.services.organizations.addMember(organization.id, admin.id, 'ADMIN', { actorUserId: null, ip: null, userAgent: null });
      await t.services.organizations.addMember(organization.id, member.id, 'MEMBER', { actorUserId: null, ip: null, userAgent: null });

      for (const [label, response] of [
        ['show', await stranger.api.get(base)],
        ['members', await stranger.api.get(`${base}/members`)],
        ['rename', await stranger.api.patch(base, { name: 'Mine' })],
        ['delete', await stranger.api.delete(base)],
        ['invite', await stranger.api.post(`${base}/invitations`, { email: 'x@example.com' })],
        ['activate', await stranger.api.post(`${base}/activate`)],
        ['unknown id', await owner.api.get('/api/organizations/nope')],
      ] as const) {
        assertError(response, 404, 'ORGANIZATION_NOT_FOUND', label);
      }

      // Any member sees the members.
      const members = await member.api.get(`${base}/members`);
      assert.equal(members.statusCode, 200);
      assert.deepEqual(members.json().members.map((m: { role: string }) => m.role).sort(), ['ADMIN', 'MEMBER', 'OWNER'], 'joined in one millisecond, they may list in either order');
      // MEMBER: no rename, no invitations, no role changes.
      assertError(await member.api.patch(base, { name: 'Renamed' }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await member.api.get(`${base}/invitations`), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await member.api.patch(`${base}/members/${admin.id}`, { role: 'MEMBER' }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      // ADMIN: rename, change MEMBER roles, but not grant or take OWNER, not remove an OWNER, not delete.
      const renamed = await admin.api.patch(base, { name: 'Roles Incorporated' });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json().organization.name, 'Roles Incorporated');
      assertError(await admin.api.patch(`${base}/members/${member.id}`, { role: 'OWNER' }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await admin.api.patch(`${base}/members/${owner.id}`, { role: 'MEMBER' }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await admin.api.delete(`${base}/members/${owner.id}`), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await admin.api.delete(base), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await admin.api.post(`${base}/invitations`, { email: uniqueEmail('x'), role: 'OWNER' }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      const custom = await admin.api.patch(`${base}/members/${member.id}`, { role: 'BILLING_MANAGER' });
      assert.equal(custom.statusCode, 200, custom.body);
      assert.equal(custom.json().member.role, 'BILLING_MANAGER');
      assertError(await admin.api.patch(`${base}/members/${member.id}`, { role: 'lower' }), 422, 'VALIDATION_ERROR');
      assertError(await admin.api.patch(`${base}/members/${stranger.id}`, { role: 'ADMIN' }), 404, 'MEMBER_NOT_FOUND');

      const updated = (await t.services.audit.listEvents({ type: 'organization.member.updated', limit: 50 })).events.find((event) => event.userId === member.id);
      assert.deepEqual(
        { organizationId: updated?.details?.organizationId, role: updated?.details?.role, previousRole: updated?.details?.previousRole, actor: updated?.actorUserId },
        { organizationId: organization.id, role: 'BILLING_MANAGER', previousRole: 'MEMBER', actor: admin.id },
      );

      // The last OWNER keeps the role, cannot leave; OWNER grants OWNER; transfer; delete.
      assertError(await owner.api.patch(`${base}/members/${owner.id}`, { role: 'ADMIN' }), 409, 'LAST_OWNER');
      assertError(await owner.api.post(`${base}/leave`), 409, 'LAST_OWNER');
      assertError(await owner.api.delete(`${base}/members/${owner.id}`), 409, 'LAST_OWNER');
      const transferred = await owner.api.post(`${base}/transfer`, { userId: admin.id });
      assert.equal(transferred.statusCode, 200, transferred.body);
      assert.equal(transferred.json().member.role, 'OWNER');
      assert.equal((await owner.api.get(base)).json().role, 'ADMIN');
      assertError(await owner.api.delete(base), 403, 'ORGANIZATION_ROLE_REQUIRED');
      const transfer = (await t.services.audit.listEvents({ type: 'organization.ownership_transferred', limit: 50 })).events.find((event) => event.details?.organizationId === organization.id);
      assert.equal(transfer?.userId, admin.id);
      assert.equal(transfer?.details?.fromUserId, owner.id);
      // The former owner (ADMIN now) leaves; the member is removed by the new owner.
      assert.equal((await owner.api.post(`${base}/leave`)).statusCode, 200);
      assertError(await owner.api.get(base), 404, 'ORGANIZATION_NOT_FOUND', 'a former member');
      assert.equal((await admin.api.delete(`${base}/members/${member.id}`)).statusCode, 200);
      const removed = (await t.services.audit.listEvents({ type: 'organization.member.removed', limit: 50 })).events.filter((event) => event.details?.organizationId === organization.id);
      assert.deepEqual(removed.map((event) => [event.userId, event.reason]).sort(), [[member.id, 'REMOVED'], [owner.id, 'LEFT']].sort());
      // Delete.
      assert.equal((await admin.api.delete(base)).statusCode, 200);
      assertError(await admin.api.get(base), 404, 'ORGANIZATION_NOT_FOUND', 'deleted');
      const deleted = (await t.services.audit.listEvents({ type: 'organization.deleted', limit: 50 })).events.find((event) => event.details?.organizationId === organization.id);
      assert.equal(deleted?.actorUserId, admin.id);
    });

    it('changes the slug, refusing one that is taken', async () => {
      const owner = await person('rename');
      const first = await organizationWith(owner, 'First');
      const second = await organizationWith(owner, 'Second');
      assertError(await owner.api.patch(`/api/organizations/${second.id}`, { slug: first.slug }), 409, 'SLUG_TAKEN');
      const slug = `renamed-${Date.now()}`;
      const changed = await owner.api.patch(`/api/organizations/${second.id}`, { slug });
      assert.equal(changed.json().organization.slug, slug);
      const event = (await t.services.audit.listEvents({ type: 'organization.updated', limit: 50 })).events.find((e) => e.details?.organizationId === second.id);
      assert.equal(event?.details?.previousSlug, second.slug);
    });

    it('ownershipBlockers and removeUser serve account deletion', async () => {
      const owner = await person('deleting');
      const other = await person('other');
      const solo = await organizationWith(owner, 'Solo');
      const shared = await organizationWith(owner, 'Shared');
      const source = { actorUserId: null, ip: null, userAgent: null };
      await t.services.organizations.addMember(shared.id, other.id, 'MEMBER', source);
      const { organizations, storage } = t.services;
      assert.deepEqual((await organizations.ownershipBlockers(owner.id)).map((o) => o.id), [shared.id]);
      const refused = await storage.db.transaction().execute((trx) => organizations.removeUser(owner.id, trx));
      assert.equal(refused.ok, false);
      assert.equal((await organizations.listMembers(shared.id, { userId: owner.id }))?.length, 2, 'nothing was written');
      await organizations.setRole(shared.id, { userId: owner.id }, other.id, 'OWNER', source);
      assert.deepEqual(await organizations.ownershipBlockers(owner.id), []);
      const removed = await storage.db.transaction().execute((trx) => organizations.removeUser(owner.id, trx));
      assert.deepEqual(removed, { ok: true, membershipsRemoved: 2, organizationsDeleted: 1 });
      assert.equal(await organizations.find(solo.id), null, 'the organization they were alone in is gone');
      assert.deepEqual((await organizations.listMembers(shared.id, { userId: other.id }))?.map((m) => m.userId), [other.id]);
      const events = (await t.services.audit.listEvents({ type: 'organization.member.removed', limit: 50 })).events.filter((event) => event.userId === owner.id);
      assert.deepEqual(events.map((event) => event.reason), ['ACCOUNT_DELETED', 'ACCOUNT_DELETED']);
    });

    it('the admin API lists, shows and deletes, for ADMINs only', async () => {
      const owner = await person('admin-api');
      const organization = await organizationWith(owner, `Searchable ${Date.now()}`);
      assertError(await owner.api.get('/api/admin/organizations'), 403, 'FORBIDDEN');
      const adminEmail = uniqueEmail('operator');
      const operator = await createSignedInUser(t, { email: adminEmail, password: PASSWORD, roles: ['ADMIN'] });
      const admin = api(t, operator.token);
      const list = await admin.get(`/api/admin/organizations?query=${encodeURIComponent(organization.name.slice(0, 14).toLowerCase())}`);
      assert.equal(list.statusCode, 200, list.body);
      assert.ok(list.json().organizations.some((o: { id: string; memberCount: number }) => o.id === organization.id && o.memberCount === 1));
      // LIKE's wildcards in a search are taken literally, on SQLite too.
      const percent = await organizationWith(owner, `Growth 100%_${Date.now()}`);
      const literal = await admin.get(`/api/admin/organizations?query=${encodeURIComponent('100%_')}`);
      assert.deepEqual(literal.json().organizations.map((o: { id: string }) => o.id), [percent.id]);
      const shown = await admin.get(`/api/admin/organizations/${organization.slug}`);
      assert.equal(shown.statusCode, 200);
      assert.equal(shown.json().members[0].userId, owner.id);
      assert.equal((await admin.delete(`/api/admin/organizations/${organization.id}`)).statusCode, 200);
      assertError(await admin.get(`/api/admin/organizations/${organization.id}`), 404, 'ORGANIZATION_NOT_FOUND');
    });

    it('the admin search: a word of the name or the slug starts with the text by default, *text anywhere, "text" exactly; keyset pages', async () => {
      const owner = await person('search-owner');
      const operator = await createSignedInUser(t, { email: uniqueEmail('search-operator'), password: PASSWORD, roles: ['ADMIN'] });
      const admin = api(t, operator.token);
      const tag = `q${Date.now().toString(36)}`;
      const northwind = await organizationWith(owner, `Northwind ${tag} Traders`);
      const acme = await organizationWith(owner, `Acme ${tag}`);
      const renamed = await owner.api.patch(`/api/organizations/${acme.id}`, { slug: `zz-${tag}-hq` });
      assert.equal(renamed.statusCode, 200, renamed.body);
      const found = async (query: string) => {
        const response = await admin.get(`/api/admin/organizations?query=${encodeURIComponent(query)}&limit=500`);
        assert.equal(response.statusCode, 200, response.body);
        return (response.json().organizations as Array<{ id: string }>).map((o) => o.id).filter((id) => id === northwind.id || id === acme.id).sort();
      };
      const both = [northwind.id, acme.id].sort();
      assert.deepEqual(await found(`${tag}`), both, 'a word of the name starts with it (after a space)');
      assert.deepEqual(await found(`TRADERS ${tag}`.split(' ')[0]!), [northwind.id], 'the last word, in any case');
      assert.deepEqual(await found(`${tag}*`), both, 'a trailing star is the default said out loud');
      assert.deepEqual(await found(`zz-${tag}`), [acme.id], 'the slug starts with it');
      assert.deepEqual(await found('hq'), [acme.id], 'a word of the slug (after a hyphen) starts with it');
      assert.deepEqual(await found(tag.slice(2)), [], 'the middle of a word is no start');
      assert.deepEqual(await found(`*${tag.slice(2)}`), both, 'a leading star finds it anywhere');
      assert.deepEqual(await found(`*${tag}-h`), [acme.id], 'anywhere in the slug');
      assert.deepEqual(await found(`"acme ${tag}"`), [acme.id], 'quotes: the whole name, in any case');
      assert.deepEqual(await found(`"acme"`), [], 'quotes: not a part of it');
      assert.deepEqual(await found(`"zz-${tag}-hq"`), [acme.id], 'quotes: the whole slug');
      assert.deepEqual(await found(`z_-${tag}`), [], "LIKE's _ is a character, not any one");
      assert.deepEqual(await found(`*e_${tag}`), [], "LIKE's _ is a character anywhere too");
      assert.deepEqual(await found(`*e%${tag}`), [], "and so is LIKE's %");
      const all = await admin.get('/api/admin/organizations?query=*&limit=500');
      assert.ok((all.json().organizations as Array<{ id: string }>).some((o) => o.id === northwind.id), 'a star alone asks for nothing: every organization');

      // Pages: newest first, `limit` at a time, each continuing strictly after the last.
      const third = await organizationWith(owner, `Third ${tag}`);
      const first = await admin.get(`/api/admin/organizations?query=${tag}&limit=2`);
      assert.equal(first.statusCode, 200, first.body);
      const firstIds = first.json().organizations.map((o: { id: string }) => o.id) as string[];
      assert.equal(firstIds.length, 2);
      assert.equal(firstIds[0], third.id, 'newest first');
      const cursor = first.json().nextCursor as string;
      assert.equal(typeof cursor, 'string');
      const second = await admin.get(`/api/admin/organizations?query=${tag}&limit=2&cursor=${encodeURIComponent(cursor)}`);
      assert.equal(second.json().nextCursor, null, 'the last page says so');
      const secondIds = second.json().organizations.map((o: { id: string }) => o.id) as string[];
      assert.deepEqual([...firstIds, ...secondIds].sort(), [northwind.id, acme.id, third.id].sort(), 'every match once, across the pages');
      assertError(await admin.get(`/api/admin/organizations?cursor=not-a-cursor`), 422, 'VALIDATION_ERROR');
    });
  });
}
