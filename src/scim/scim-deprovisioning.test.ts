/**
 * SCIM deprovisioning is one transaction: `active: false` (PATCH or PUT) and DELETE remove the
 * membership, end the sessions, disable an owned account left in no organization, and record the
 * events (what the webhooks' outbox is written from) together with the User's own change, or do
 * none of it. A test module's subscription fails the last step (the event of the User's change)
 * on demand; the request then answers 500 and everything is as before.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { api, uniqueEmail } from '../organizations/organizations.test-helpers.ts';
import { SYSTEM_SOURCE, type AuditEventType } from '../audit/audit.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import { defineModule } from '../module.ts';
import { MODULES } from '../modules.ts';

const PASSWORD = 'correct horse battery staple';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** Accounts whose next SCIM change fails at its last step (the event of the User's change). */
const failFor = new Set<string>();
const failingStep = defineModule({
  name: 'failing-step',
  subscriptions: () => [
    {
      types: ['scim.user_updated', 'scim.user_deleted'],
      async handle(event) {
        if (event.userId !== null && failFor.delete(event.userId)) throw new Error('a step of the change failed');
      },
    },
  ],
});

for (const backend of await backends()) {
  describe(`SCIM deprovisioning is all or nothing (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const t = useTestApp(backend, { modules: [...MODULES, failingStep] });

    async function organizationWithToken(t: TestApp) {
      const owner = await createSignedInUser(t, { email: uniqueEmail('owner'), password: PASSWORD });
      const organization = (await api(t, owner.token).post('/api/organizations', { name: 'Atomic Inc' })).json().organization as { id: string };
      const token = (await api(t, owner.token).post(`/api/organizations/${organization.id}/scim-tokens`, { name: 'Okta' })).json().token as string;
      const scim = async (method: 'POST' | 'PATCH' | 'DELETE' | 'GET', url: string, body?: unknown) => {
        const response = await t.app.inject({ method, url: `/scim/v2${url}`, headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/scim+json' }) }, ...(body !== undefined && { payload: JSON.stringify(body) }) });
        return { status: response.statusCode, body: response.body === '' ? null : (response.json() as Record<string, any>) };
      };
      return { organizationId: organization.id, scim };
    }

    const isMember = async (organizationId: string, userId: string) => ((await t.services.organizations.listMembers(organizationId, OPERATOR)) ?? []).some((member) => member.userId === userId);
    const eventsAbout = async (userId: string, types: AuditEventType[]) => {
      const found: string[] = [];
      for (const type of types) if ((await t.services.audit.listEvents({ type, limit: 200 })).events.some((event) => event.userId === userId)) found.push(type);
      return found;
    };
    const DEPROVISIONING_EVENTS: AuditEventType[] = ['organization.member.removed', 'user.sessions_ended', 'user.disabled', 'scim.user_deprovisioned', 'scim.user_updated', 'scim.user_deleted'];

    for (const how of ['deactivate', 'delete'] as const) {
      it(`${how}: a step failing leaves the member, their sessions and the owned account as they were, with no event; the retry does it all`, async () => {
        const { organizationId, scim } = await organizationWithToken(t);
        // A linked member with a live session, and an account provisioning created (in no other organization).
        const person = await createSignedInUser(t, { email: uniqueEmail('linked'), password: PASSWORD });
        await t.services.organizations.addMember(organizationId, person.id, 'MEMBER', SYSTEM_SOURCE);
        const linked = await scim('POST', '/Users', { userName: person.email });
        assert.equal(linked.status, 201, JSON.stringify(linked.body));
        const owned = await scim('POST', '/Users', { userName: uniqueEmail('owned') });
        assert.equal(owned.status, 201, JSON.stringify(owned.body));
        const ownedUserId = (await t.services.users.findUserByEmail(owned.body!.userName))!.id;
        assert.equal(await isMember(organizationId, ownedUserId), true);

        const deprovision = (id: string) => (how === 'delete' ? scim('DELETE', `/Users/${id}`) : scim('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] }));
        for (const [scimUser, userId] of [[linked, person.id], [owned, ownedUserId]] as const) {
          failFor.add(userId);
          const failed = await deprovision(scimUser.body!.id);
          assert.equal(failed.status, 500, JSON.stringify(failed.body));
          assert.equal(failFor.has(userId), false, 'the failing step ran');
          assert.equal(await isMember(organizationId, userId), true, 'still a member');
          assert.equal((await t.services.users.findUserById(userId))?.disabledAt, null, 'not disabled');
          assert.deepEqual(await eventsAbout(userId, DEPROVISIONING_EVENTS), [], 'no event recorded, so none announced');
          const still = await scim('GET', `/Users/${scimUser.body!.id}`);
          assert.equal(still.status, 200);
          assert.equal(still.body?.active, true);
        }
        assert.equal((await api(t, person.token).get('/api/auth/session')).statusCode, 200, 'the session lives');

        // The retry, with nothing failing: everything at once.
        for (const scimUser of [linked, owned]) assert.equal((await deprovision(scimUser.body!.id)).status, how === 'delete' ? 204 : 200);
        assert.equal(await isMember(organizationId, person.id), false);
        assert.equal(await isMember(organizationId, ownedUserId), false);
        assert.equal((await api(t, person.token).get('/api/auth/session')).statusCode, 401, 'the session ended');
        assert.equal((await t.services.users.findUserById(person.id))?.disabledAt, null, 'a linked account is not disabled');
        assert.notEqual((await t.services.users.findUserById(ownedUserId))?.disabledAt, null, 'the owned account is disabled');
        const last = how === 'delete' ? 'scim.user_deleted' : 'scim.user_updated';
        assert.deepEqual(await eventsAbout(person.id, DEPROVISIONING_EVENTS), ['organization.member.removed', 'user.sessions_ended', 'scim.user_deprovisioned', last]);
        assert.deepEqual(await eventsAbout(ownedUserId, DEPROVISIONING_EVENTS), ['organization.member.removed', 'user.disabled', 'scim.user_deprovisioned', last]);
      });
    }
  });
}
