/**
 * SCIM end to end on every backend: tokens managed by an organization's OWNER; a directory client
 * replaying Okta's and Microsoft Entra ID's documented request sequences (create, the PATCH shapes
 * each sends, deactivate, group membership); filters and pagination; discovery; SCIM's error
 * shape; a token of one organization refused on another's resources; deprovisioning ending the
 * person's sessions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { api, uniqueEmail } from '../organizations/organizations.test-helpers.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import { SCIM_PUBLIC_EVENTS } from './scim.public-events.ts';

const PASSWORD = 'correct horse battery staple';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

function directory(t: TestApp, token: string) {
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown) => {
    const response = await t.app.inject({
      method,
      url: `/scim/v2${url}`,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/scim+json' }) },
      ...(body !== undefined && { payload: JSON.stringify(body) }),
    });
    return { status: response.statusCode, body: response.body === '' ? null : (response.json() as Record<string, any>), type: response.headers['content-type'] };
  };
  return {
    get: (url: string) => call('GET', url),
    post: (url: string, body: unknown) => call('POST', url, body),
    put: (url: string, body: unknown) => call('PUT', url, body),
    patch: (url: string, operations: unknown[]) => call('PATCH', url, { schemas: [PATCH_OP], Operations: operations }),
    delete: (url: string) => call('DELETE', url),
  };
}

for (const backend of await backends()) {
  describe(`SCIM (${backend.name})`, { skip: backend.skip, timeout: 180_000 }, () => {
    const t = useTestApp(backend);

    async function organizationWithToken(name: string) {
      const owner = await createSignedInUser(t, { email: uniqueEmail('owner'), password: PASSWORD });
      const ownerApi = api(t, owner.token);
      const created = await ownerApi.post('/api/organizations', { name });
      assert.equal(created.statusCode, 201, created.body);
      const organization = created.json().organization as { id: string; slug: string };
      const issued = await ownerApi.post(`/api/organizations/${organization.id}/scim-tokens`, { name: 'Okta' });
      assert.equal(issued.statusCode, 201, issued.body);
      const { token, scimToken, baseUrl } = issued.json();
      assert.match(token, /^gatehouse_scim_[A-Za-z0-9_-]{43}$/);
      assert.equal(baseUrl, `${t.config.authUrl}/scim/v2`);
      return { owner, ownerApi, organization, token: token as string, tokenId: scimToken.id as string, scim: directory(t, token) };
    }

    const memberIds = async (organizationId: string) => ((await t.services.organizations.listMembers(organizationId, OPERATOR)) ?? []).map((member) => member.userId);

    it('manages tokens: shown once, stored hashed, rotated, revoked; audited without the token', async () => {
      const { ownerApi, organization, token, tokenId, scim } = await organizationWithToken('Tokens Inc');
      assert.equal((await scim.get('/ServiceProviderConfig')).status, 200);
      const list = await ownerApi.get(`/api/organizations/${organization.id}/scim-tokens`);
      assert.equal(list.statusCode, 200);
      assert.ok(!list.body.includes(token));
      const rows = await t.services.storage.db.selectFrom('scim_tokens').selectAll().where('organization_id', '=', organization.id).execute();
      assert.ok(rows.every((row) => row.token_hash !== token && !row.token_hash.includes('gatehouse_scim_')));
      const rotated = await ownerApi.post(`/api/organizations/${organization.id}/scim-tokens/${tokenId}/rotate`, {});
      assert.equal(rotated.statusCode, 200, rotated.body);
      assert.equal((await scim.get('/Users')).status, 401, 'the old token stops working');
      const fresh = directory(t, rotated.json().token);
      assert.equal((await fresh.get('/Users')).status, 200);
      const revoked = await ownerApi.delete(`/api/organizations/${organization.id}/scim-tokens/${rotated.json().scimToken.id}`);
      assert.equal(revoked.statusCode, 200);
      const refused = await fresh.get('/Users');
      assert.equal(refused.status, 401);
      assert.deepEqual(refused.body?.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
      assert.equal(refused.body?.status, '401');
      const events = (await t.services.audit.listEvents({ limit: 200 })).events.filter((event) => event.type.startsWith('scim.token_'));
      assert.ok(events.length >= 3);
      assert.ok(events.every((event) => !JSON.stringify(event).includes('gatehouse_scim_')));
      // A member who is not OWNER or ADMIN may not manage tokens.
      const member = await createSignedInUser(t, { email: uniqueEmail('member'), password: PASSWORD });
      await t.services.organizations.addMember(organization.id, member.id, 'MEMBER', SYSTEM_SOURCE);
      assert.equal((await api(t, member.token).get(`/api/organizations/${organization.id}/scim-tokens`)).statusCode, 403);
    });

    it("replays Okta's sequence: lookup, create, read, replace-patch deactivate, reactivate, PUT, groups", async () => {
      const { organization, scim } = await organizationWithToken('Okta Inc');
      const email = uniqueEmail('okta');
      // Okta first looks the user up by userName.
      const lookup = await scim.get(`/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}&startIndex=1&count=100`);
      assert.equal(lookup.status, 200);
      assert.equal(lookup.body?.totalResults, 0);
      const created = await scim.post('/Users', {
        schemas: [USER],
        userName: email,
        name: { givenName: 'Ada', familyName: 'Lovelace' },
        emails: [{ primary: true, value: email, type: 'work' }],
        displayName: 'Ada Lovelace',
        locale: 'en-US',
        externalId: '00u1okta',
        groups: [],
        password: 'ignored-by-us-1!',
        active: true,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.match(String(created.type), /application\/scim\+json/);
      const id = created.body!.id as string;
      const account = await t.services.users.findUserByEmail(email);
      assert.ok(account);
      assert.equal(account.name, 'Ada Lovelace');
      assert.equal((await t.services.users.findCredentialsById(account.id))?.passwordHash, null, 'no password is taken from the directory');
      assert.ok((await memberIds(organization.id)).includes(account.id));
      assert.equal((await scim.get(`/Users/${id}`)).body?.userName, email);
      // Case-insensitive userName lookup.
      assert.equal((await scim.get(`/Users?filter=${encodeURIComponent(`userName eq "${email.toUpperCase()}"`)}`)).body?.totalResults, 1);
      // Okta deactivates with a replace and no path.
      const deactivated = await scim.patch(`/Users/${id}`, [{ op: 'replace', value: { active: false } }]);
      assert.equal(deactivated.status, 200, JSON.stringify(deactivated.body));
      assert.equal(deactivated.body?.active, false);
      assert.ok(!(await memberIds(organization.id)).includes(account.id));
      assert.ok((await t.services.users.findUserById(account.id))?.disabledAt !== null, 'an account provisioning made, in no other organization, is disabled');
      const reactivated = await scim.patch(`/Users/${id}`, [{ op: 'replace', value: { active: true } }]);
      assert.equal(reactivated.body?.active, true);
      assert.ok((await memberIds(organization.id)).includes(account.id));
      assert.equal((await t.services.users.findUserById(account.id))?.disabledAt, null);
      // Okta's profile update is a PUT of the whole user.
      const put = await scim.put(`/Users/${id}`, { schemas: [USER], id, userName: email, name: { givenName: 'Augusta', familyName: 'King' }, emails: [{ primary: true, value: email, type: 'work' }], active: true });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(put.body?.name.givenName, 'Augusta');
      assert.equal((await t.services.users.findUserById(account.id))?.name, 'Augusta King');
      // Groups: create with a member, rename (replace without path), remove by filter path.
      const group = await scim.post('/Groups', { schemas: [GROUP], displayName: 'Engineering', members: [{ value: id, display: email }] });
      assert.equal(group.status, 201, JSON.stringify(group.body));
      const groupId = group.body!.id as string;
      assert.deepEqual(group.body?.members.map((member: { value: string }) => member.value), [id]);
      const renamed = await scim.patch(`/Groups/${groupId}`, [{ op: 'replace', value: { id: groupId, displayName: 'Eng' } }]);
      assert.equal(renamed.body?.displayName, 'Eng');
      const removed = await scim.patch(`/Groups/${groupId}`, [{ op: 'remove', path: `members[value eq "${id}"]` }]);
      assert.deepEqual(removed.body?.members, []);
      const added = await scim.patch(`/Groups/${groupId}`, [{ op: 'add', path: 'members', value: [{ value: id, display: email }] }]);
      assert.equal(added.body?.members.length, 1);
      assert.equal((await scim.get(`/Users/${id}`)).body?.groups[0].value, groupId);
      assert.equal((await scim.delete(`/Groups/${groupId}`)).status, 204);
      assert.equal((await scim.get(`/Groups/${groupId}`)).status, 404);
    });

    it("replays Entra's sequence: capitalised ops, string booleans, filtered paths, enterprise extension, member removal by value", async () => {
      const { organization, owner, scim } = await organizationWithToken('Entra Inc');
      const mapped = await t.app.inject({ method: 'PUT', url: `/api/organizations/${organization.id}/scim-role-mappings`, headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, payload: JSON.stringify({ mappings: [{ group: 'Admins', role: 'ADMIN' }] }) });
      assert.equal(mapped.statusCode, 200, mapped.body);
      const email = uniqueEmail('entra');
      assert.equal((await scim.get(`/Users?filter=${encodeURIComponent('userName eq "nobody@example.com"')}`)).body?.totalResults, 0);
      const created = await scim.post('/Users', {
        schemas: [USER, ENTERPRISE],
        externalId: 'f0a1-entra',
        userName: email,
        active: true,
        displayName: 'Grace Hopper',
        emails: [{ primary: true, type: 'work', value: email }],
        name: { formatted: 'Grace Hopper', familyName: 'Hopper', givenName: 'Grace' },
        [ENTERPRISE]: { employeeNumber: '701984', department: 'Navy' },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body!.id as string;
      assert.equal(created.body?.[ENTERPRISE]?.department, 'Navy');
      const patched = await scim.patch(`/Users/${id}`, [
        { op: 'Replace', path: 'displayName', value: 'Rear Admiral Hopper' },
        { op: 'Add', path: 'emails[type eq "work"].value', value: email },
        { op: 'Replace', path: 'name.familyName', value: 'Hopper-Murray' },
        { op: 'Add', path: `${ENTERPRISE}:department`, value: 'Research' },
        { op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+1 555 0100' },
        { op: 'Add', path: `${ENTERPRISE}:manager`, value: 'manager-id' },
      ]);
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal(patched.body?.displayName, 'Rear Admiral Hopper');
      assert.equal(patched.body?.name.familyName, 'Hopper-Murray');
      assert.equal(patched.body?.[ENTERPRISE]?.department, 'Research');
      assert.deepEqual(patched.body?.phoneNumbers, [{ type: 'mobile', value: '+1 555 0100' }]);
      assert.deepEqual(patched.body?.[ENTERPRISE]?.manager, { value: 'manager-id' });
      assert.equal((await scim.get(`/Users?filter=${encodeURIComponent('externalId eq "f0a1-entra"')}`)).body?.Resources[0].id, id);
      // Group: Entra creates it empty, then adds and removes members by PATCH with value arrays.
      const group = await scim.post('/Groups', { schemas: [GROUP], displayName: 'Admins', externalId: 'g-1', members: [] });
      assert.equal(group.status, 201);
      const groupId = group.body!.id as string;
      assert.equal((await scim.get(`/Groups?filter=${encodeURIComponent('displayName eq "admins"')}&excludedAttributes=members`)).body?.Resources[0].members, undefined);
      await scim.patch(`/Groups/${groupId}`, [{ op: 'Add', path: 'members', value: [{ value: id }] }]);
      const account = (await t.services.users.findUserByEmail(email))!;
      const role = async () => ((await t.services.organizations.listMembers(organization.id, OPERATOR)) ?? []).find((member) => member.userId === account.id)?.role;
      assert.equal(await role(), 'ADMIN', 'the mapped group gives its role');
      await scim.patch(`/Groups/${groupId}`, [{ op: 'Remove', path: 'members', value: [{ value: id }] }]);
      assert.equal(await role(), 'MEMBER');
      // Entra deactivates with a string boolean.
      const off = await scim.patch(`/Users/${id}`, [{ op: 'Replace', path: 'active', value: 'False' }]);
      assert.equal(off.status, 200, JSON.stringify(off.body));
      assert.equal(off.body?.active, false);
      assert.equal(await role(), undefined);
      assert.equal((await scim.delete(`/Users/${id}`)).status, 204);
      assert.equal((await scim.get(`/Users/${id}`)).status, 404);
      const deprovisioned = (await t.services.audit.listEvents({ type: 'scim.user_deprovisioned', limit: 50 })).events.find((event) => event.details?.scimUserId === id);
      assert.ok(deprovisioned);
      // Its webhook carries ids and facts only.
      const payload = SCIM_PUBLIC_EVENTS.find((type) => type.from === 'scim.user_deprovisioned')!.payload(deprovisioned);
      assert.deepEqual(Object.keys(payload).sort(), ['accountDisabled', 'organizationId', 'reason', 'scimUserId', 'sessionsEnded', 'userId']);
      assert.ok(!JSON.stringify(payload).includes('@'));
    });

    it('filters and pages; refuses bad filters and bodies in SCIM error shape, never a 500', async () => {
      const { scim } = await organizationWithToken('Filters Inc');
      const prefix = `pg${Date.now()}`;
      for (let index = 0; index < 5; index++) {
        const created = await scim.post('/Users', { userName: `${prefix}-${index}@example.com`, displayName: `Person ${index}`, active: index !== 4 });
        assert.equal(created.status, 201, JSON.stringify(created.body));
      }
      const query = (filter: string, extra = '') => scim.get(`/Users?filter=${encodeURIComponent(filter)}${extra}`);
      assert.equal((await query(`userName sw "${prefix}"`)).body?.totalResults, 5);
      assert.equal((await query(`userName co "-3@"`)).body?.totalResults, 1);
      assert.equal((await query(`userName ew "-1@example.com" or userName ew "-2@example.com"`)).body?.totalResults, 2);
      assert.equal((await query(`userName sw "${prefix}" and active eq false`)).body?.totalResults, 1);
      assert.equal((await query(`userName sw "${prefix}" and not (active eq true)`)).body?.totalResults, 1);
      assert.equal((await query(`userName sw "${prefix}" and displayName pr`)).body?.totalResults, 5);
      assert.equal((await query(`meta.lastModified gt "2000-01-01T00:00:00Z" and userName sw "${prefix}"`)).body?.totalResults, 5);
      assert.equal((await query(`userName sw "${prefix}%"`)).body?.totalResults, 0, 'LIKE wildcards are literal');
      const page = await query(`userName sw "${prefix}"`, '&startIndex=2&count=2');
      assert.equal(page.body?.totalResults, 5);
      assert.equal(page.body?.startIndex, 2);
      assert.equal(page.body?.itemsPerPage, 2);
      assert.equal(page.body?.Resources[0].userName, `${prefix}-1@example.com`);
      for (const bad of ['userName eq', 'password eq "x"', 'userName gt true', "userName eq \"x\"; drop table users", '(((((']) {
        const response = await query(bad);
        assert.equal(response.status, 400, bad);
        assert.equal(response.body?.scimType, 'invalidFilter', bad);
        assert.equal(response.body?.status, '400');
      }
      const duplicate = await scim.post('/Users', { userName: `${prefix}-0@EXAMPLE.com` });
      assert.equal(duplicate.status, 409);
      assert.equal(duplicate.body?.scimType, 'uniqueness');
      assert.equal((await scim.post('/Users', { userName: 'not-an-address' })).body?.scimType, 'invalidValue');
      assert.equal((await scim.post('/Users', [])).status, 400);
      const malformed = await t.app.inject({ method: 'POST', url: '/scim/v2/Users', headers: { authorization: (await organizationWithToken('Malformed Inc')).token.replace(/^/, 'Bearer '), 'content-type': 'application/scim+json' }, payload: '{"userName":' });
      assert.equal(malformed.statusCode, 400);
      assert.equal(malformed.json().scimType, 'invalidSyntax');
      const first = (await query(`userName sw "${prefix}"`)).body?.Resources[0].id;
      for (const operations of [[{ op: 'move', path: 'active' }], [{ op: 'replace', path: 'id', value: 'x' }], [{ op: 'remove' }], [{ op: 'replace', path: 'emails[type eq', value: 'x' }]]) {
        const response = await scim.patch(`/Users/${first}`, operations);
        assert.equal(response.status, 400, JSON.stringify(operations));
        assert.ok(response.body?.scimType, JSON.stringify(response.body));
      }
      assert.equal((await scim.get('/Users/nope')).status, 404);
      const discovery = await scim.get('/Schemas');
      assert.ok(discovery.body?.Resources.some((schema: { id: string }) => schema.id === ENTERPRISE));
      assert.equal((await scim.get('/ResourceTypes')).body?.totalResults, 2);
    });

    it('parallel PATCH additions of one member to one group all answer 200 and add them once', async () => {
      const { scim } = await organizationWithToken('Race Inc');
      const created = await scim.post('/Users', { userName: uniqueEmail('racer') });
      assert.equal(created.status, 201);
      const id = created.body!.id as string;
      const group = await scim.post('/Groups', { schemas: [GROUP], displayName: 'Racers', members: [] });
      assert.equal(group.status, 201);
      const groupId = group.body!.id as string;
      const answers = await Promise.all(Array.from({ length: 12 }, () => scim.patch(`/Groups/${groupId}`, [{ op: 'add', path: 'members', value: [{ value: id }] }])));
      assert.deepEqual(answers.map((answer) => answer.status), answers.map(() => 200), JSON.stringify(answers.find((answer) => answer.status !== 200)?.body));
      const members = await t.services.storage.db.selectFrom('scim_group_members').selectAll().where('group_id', '=', groupId).execute();
      assert.equal(members.length, 1);
      assert.deepEqual((await scim.get(`/Groups/${groupId}`)).body?.members.map((member: { value: string }) => member.value), [id]);
    });

    it("refuses one organization's token on another's resources", async () => {
      const first = await organizationWithToken('First Inc');
      const second = await organizationWithToken('Second Inc');
      const created = await first.scim.post('/Users', { userName: uniqueEmail('first') });
      const id = created.body!.id as string;
      assert.equal((await second.scim.get(`/Users/${id}`)).status, 404);
      assert.equal((await second.scim.patch(`/Users/${id}`, [{ op: 'replace', value: { active: false } }])).status, 404);
      assert.equal((await second.scim.delete(`/Users/${id}`)).status, 404);
      assert.equal((await second.scim.get('/Users')).body?.totalResults, 0);
      assert.equal((await first.scim.get(`/Users/${id}`)).body?.active, true);
      // Nor is a SCIM token a Gatehouse credential.
      assert.equal((await api(t, first.token).get('/api/organizations')).statusCode, 401);
    });

    it('deprovisioning ends the sessions of a linked member; an account outside the organization is never taken over', async () => {
      const { organization, scim } = await organizationWithToken('Sessions Inc');
      const person = await createSignedInUser(t, { email: uniqueEmail('linked'), password: PASSWORD });
      const stranger = await createSignedInUser(t, { email: uniqueEmail('stranger'), password: PASSWORD });
      const refused = await scim.post('/Users', { userName: stranger.email });
      assert.equal(refused.status, 409);
      assert.equal(refused.body?.scimType, 'uniqueness');
      await t.services.organizations.addMember(organization.id, person.id, 'MEMBER', SYSTEM_SOURCE);
      const linked = await scim.post('/Users', { userName: person.email, displayName: 'Not My Name' });
      assert.equal(linked.status, 201, JSON.stringify(linked.body));
      assert.equal((await t.services.users.findUserById(person.id))?.name, 'Test User', "a linked account's profile is not changed");
      assert.equal((await api(t, person.token).get('/api/auth/session')).statusCode, 200);
      const off = await scim.patch(`/Users/${linked.body!.id}`, [{ op: 'replace', path: 'active', value: false }]);
      assert.equal(off.status, 200);
      assert.equal((await api(t, person.token).get('/api/auth/session')).statusCode, 401, 'the session ended');
      assert.equal((await t.services.users.findUserById(person.id))?.disabledAt, null, 'a linked account is not disabled');
      const ended = (await t.services.audit.listEvents({ type: 'user.sessions_ended', limit: 50 })).events.find((event) => event.userId === person.id);
      assert.equal(ended?.reason, 'SCIM_DEPROVISIONED');
      assert.ok((await t.services.audit.listEvents({ type: 'organization.member.removed', limit: 50 })).events.some((event) => event.userId === person.id));
    });
  });
}
