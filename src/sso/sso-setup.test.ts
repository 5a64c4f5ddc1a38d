/**
 * SSO setup links on SQLite and PostgreSQL: made, listed and revoked by the organization's OWNER
 * (not an ADMIN or MEMBER of it, not an outsider) and by Gatehouse administrators; the URL is in
 * the answer once, only its hash stored, nothing secret in the audit log. The link's pages without
 * a browser: the token moves from the URL to a cookie, the SAML connection is saved with the id
 * the link reserved, a test sign-in's response comes back to a page that shows what the IdP
 * asserted and nobody is created or signed in; unknown, tampered, expired and revoked links are
 * refused; a link only ever sets up its own organization's connection; the pages are rate-limited.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import { api, assertError, uniqueEmail } from '../organizations/organizations.test-helpers.ts';
import { startTestIdp, type TestIdp } from './sso.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';

/** A browser holding a setup link: the link opened, its CSRF token at hand. */
async function openLink(t: TestApp, url: string) {
  const browser = await formBrowser(t.app);
  const opened = await t.app.inject({ url: url.slice(t.config.authUrl.length), headers: { cookie: browser.jar.header() } });
  browser.jar.store(opened);
  return { browser, opened };
}

for (const backend of await backends()) {
  describe(`SSO setup links (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend);
    let idp: TestIdp;
    let owner: { id: string; token: string };
    let admin: { id: string; token: string };
    let orgAdmin: { id: string; token: string };
    let organizationId: string;

    before(async () => {
      idp = await startTestIdp();
      owner = await createSignedInUser(t, { email: uniqueEmail('owner'), password: PASSWORD });
      orgAdmin = await createSignedInUser(t, { email: uniqueEmail('org-admin'), password: PASSWORD });
      admin = await createSignedInUser(t, { email: uniqueEmail('admin'), password: PASSWORD, roles: ['ADMIN'] });
      const org = await t.services.organizations.create({ name: 'Umbrella' }, owner.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      organizationId = org.organization.id;
      assert.ok((await t.services.organizations.addMember(organizationId, orgAdmin.id, 'ADMIN', SYSTEM_SOURCE)).ok);
    });

    it('lets the OWNER (and Gatehouse administrators) create, list and revoke links; hashed, audited without the token', async () => {
      const base = `/api/organizations/${organizationId}/sso-setup-links`;
      const created = await api(t, owner.token).post(base, {});
      assert.equal(created.statusCode, 201, created.body);
      const { url, setupLink } = created.json();
      assert.match(url, new RegExp(`^${t.config.authUrl}/sso/setup\\?token=[A-Za-z0-9_-]{43}$`));
      assert.equal(setupLink.status, 'active');
      assert.equal(Date.parse(setupLink.expiresAt) - Date.parse(setupLink.createdAt), 7 * 86_400_000);
      const token = new URL(url).searchParams.get('token')!;

      const listed = await api(t, owner.token).get(base);
      assert.deepEqual(listed.json().setupLinks.map((link: { id: string }) => link.id), [setupLink.id]);
      assert.equal(listed.body.includes(token), false);
      const stored = await sql<Record<string, unknown>>`select * from sso_setup_links`.execute(t.services.storage.db);
      assert.equal(JSON.stringify(stored.rows).includes(token), false);

      assertError(await api(t, orgAdmin.token).post(base, {}), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await api(t, orgAdmin.token).get(base), 403, 'ORGANIZATION_ROLE_REQUIRED');
      const outsider = await createSignedInUser(t, { email: uniqueEmail('outsider'), password: PASSWORD });
      assertError(await api(t, outsider.token).get(base), 404, 'ORGANIZATION_NOT_FOUND');
      assertError(await api(t, owner.token).post(base, { expiresInDays: 31 }), 422, 'VALIDATION_ERROR');
      assertError(await api(t, owner.token).post(base, { connectionId: 'no-such-connection' }), 404, 'SSO_CONNECTION_NOT_FOUND');

      const byAdmin = await api(t, admin.token).post(`/api/admin/organizations/${organizationId}/sso-setup-links`, { expiresInDays: 1 });
      assert.equal(byAdmin.statusCode, 201, byAdmin.body);
      assert.equal(Date.parse(byAdmin.json().setupLink.expiresAt) - Date.parse(byAdmin.json().setupLink.createdAt), 86_400_000);
      assertError(await api(t, owner.token).get(`/api/admin/organizations/${organizationId}/sso-setup-links`), 403, 'FORBIDDEN');

      assert.equal((await api(t, owner.token).delete(`${base}/${setupLink.id}`)).statusCode, 200);
      assertError(await api(t, owner.token).delete(`${base}/${setupLink.id}`), 404, 'SSO_SETUP_LINK_NOT_FOUND');
      assert.equal((await api(t, admin.token).delete(`/api/admin/organizations/${organizationId}/sso-setup-links/${byAdmin.json().setupLink.id}`)).statusCode, 200);
      const statuses = (await api(t, owner.token).get(base)).json().setupLinks.map((link: { status: string }) => link.status);
      assert.deepEqual(statuses, ['revoked', 'revoked']);

      const events = await sql<{ type: string; details: unknown }>`select type, details from audit_events where type like 'sso.setup_link_%' order by created_at`.execute(t.services.storage.db);
      assert.deepEqual(events.rows.map((row) => row.type), ['sso.setup_link_created', 'sso.setup_link_created', 'sso.setup_link_revoked', 'sso.setup_link_revoked']);
      assert.equal(JSON.stringify(events.rows).includes(token), false);
    });

    it('opens the link into a cookie, saves the SAML connection, tests a sign-in that creates nobody', async () => {
      const created = await t.services.sso.setup.create(organizationId, {}, OPERATOR, SYSTEM_SOURCE);
      assert.ok(created.ok);
      const { connectionId } = created.link;
      const { browser, opened } = await openLink(t, created.url);
      assert.equal(opened.statusCode, 303);
      assert.equal(opened.headers.location, '/sso/setup');
      const cookie = opened.cookies.find((item) => item.name.endsWith('gatehouse.sso-setup'));
      assert.ok(cookie?.httpOnly);

      const page = await t.app.inject({ url: '/sso/setup', headers: { cookie: browser.jar.header() } });
      assert.equal(page.statusCode, 200);
      assert.ok(page.body.includes(`${t.config.authUrl}/sso/saml/${connectionId}/acs`));
      assert.equal(page.headers['cache-control'], 'no-store');

      const origin = t.config.authUrl;
      const saved = await postForm(t.app, browser, '/sso/setup/connection', { protocol: 'saml', name: 'Umbrella Okta', idpMetadataXml: idp.metadata }, origin);
      assert.equal(saved.statusCode, 303, saved.body);
      const connection = await t.services.sso.connections.get(connectionId);
      assert.equal(connection?.organizationId, organizationId);
      assert.equal(connection?.name, 'Umbrella Okta');
      // Unreadable metadata: the page again, 422, nothing changed.
      const bad = await postForm(t.app, browser, '/sso/setup/connection', { protocol: 'saml', idpMetadataXml: '<nope' }, origin);
      assert.equal(bad.statusCode, 422);
      assert.ok(bad.body.includes('SSO_INVALID_CONNECTION'));
      // The protocol of a saved connection stays.
      assert.equal((await postForm(t.app, browser, '/sso/setup/connection', { protocol: 'oidc', issuer: 'https://idp.example', clientId: 'a', clientSecret: 'b' }, origin)).statusCode, 422);
      // Without the CSRF token: refused.
      const forged = await t.app.inject({ method: 'POST', url: '/sso/setup/scim-token', headers: { 'content-type': 'application/x-www-form-urlencoded', origin, cookie: browser.jar.header() }, payload: '' });
      assert.equal(forged.statusCode, 403);

      const users = Number((await sql<{ n: number }>`select count(*) as n from users`.execute(t.services.storage.db)).rows[0]!.n);
      const started = await postForm(t.app, browser, '/sso/setup/test', {}, origin);
      assert.equal(started.statusCode, 303);
      const request = idp.readRequest(started.headers.location as string);
      const spMetadata = (await t.app.inject({ url: `/sso/saml/${connectionId}/metadata` })).body;
      const email = `${uniqueEmail('tester').split('@')[0]}@umbrella.example`;
      const samlResponse = await idp.respond(spMetadata, { nameIdXml: email, attributes: { email: [email], name: ['Tess Tester'], groups: ['admins'] }, inResponseTo: request.id });
      const answered = await t.app.inject({ method: 'POST', url: `/sso/saml/${connectionId}/acs`, payload: { SAMLResponse: samlResponse, RelayState: request.relayState ?? '' } });
      assert.equal(answered.statusCode, 303);
      assert.match(answered.headers.location as string, /^\/sso\/setup\/tests\/[A-Za-z0-9_-]+$/);
      assert.equal(answered.cookies.length, 0, 'no session cookie');
      assert.equal(await t.services.users.findUserByEmail(email), null);
      assert.equal(Number((await sql<{ n: number }>`select count(*) as n from users`.execute(t.services.storage.db)).rows[0]!.n), users);

      const result = await t.app.inject({ url: answered.headers.location as string, headers: { cookie: browser.jar.header() } });
      assert.equal(result.statusCode, 200);
      for (const shown of [email, 'Tess Tester', 'admins']) assert.ok(result.body.includes(shown), shown);
      // The result is this link's only: another browser (no link) or another link sees nothing.
      assert.equal((await t.app.inject({ url: answered.headers.location as string })).statusCode, 404);
      const other = await t.services.sso.setup.create(organizationId, {}, OPERATOR, SYSTEM_SOURCE);
      assert.ok(other.ok);
      const otherBrowser = (await openLink(t, other.url)).browser;
      const foreign = await t.app.inject({ url: answered.headers.location as string, headers: { cookie: otherBrowser.jar.header() } });
      assert.equal(foreign.statusCode, 404);
      assert.ok(foreign.body.includes('SSO_SETUP_TEST_NOT_FOUND'));
      // A replay of the same response is refused as any replay is (and still signs nobody in).
      const replay = await t.app.inject({ method: 'POST', url: `/sso/saml/${connectionId}/acs`, payload: { SAMLResponse: samlResponse } });
      assert.equal(replay.statusCode, 303);
      assert.equal(await t.services.users.findUserByEmail(email), null);
    });

    it('refuses unknown, tampered, expired and revoked links; a link sets up its own organization only', async () => {
      for (const path of ['/sso/setup', '/sso/setup?token=short', `/sso/setup?token=${'A'.repeat(43)}`]) {
        const refused = await t.app.inject({ url: path });
        assert.equal(refused.statusCode, 404, path);
        assert.ok(refused.body.includes('SSO_SETUP_LINK_INVALID'));
      }
      const expired = await t.services.sso.setup.create(organizationId, {}, OPERATOR, SYSTEM_SOURCE);
      assert.ok(expired.ok);
      await sql`update sso_setup_links set expires_at = ${Date.now() - 1} where id = ${expired.link.id}`.execute(t.services.storage.db);
      assert.equal((await t.app.inject({ url: expired.url.slice(t.config.authUrl.length) })).statusCode, 410);

      // Another organization's connection, named when making a link of this one: refused.
      const other = await t.services.organizations.create({ name: 'Other Corp' }, owner.id, SYSTEM_SOURCE);
      assert.ok(other.ok);
      const theirs = await t.services.sso.connections.create(other.organization.id, { protocol: 'saml', name: 'Theirs', idpMetadataXml: idp.metadata }, SYSTEM_SOURCE);
      assert.ok(theirs.ok);
      assertError(await api(t, owner.token).post(`/api/organizations/${organizationId}/sso-setup-links`, { connectionId: theirs.connection.id }), 404, 'SSO_CONNECTION_NOT_FOUND');
      // A link of the other organization for its connection changes that one only.
      const link = await t.services.sso.setup.create(other.organization.id, { connectionId: theirs.connection.id }, OPERATOR, SYSTEM_SOURCE);
      assert.ok(link.ok);
      const { browser } = await openLink(t, link.url);
      const renamed = await postForm(t.app, browser, '/sso/setup/connection', { protocol: 'saml', name: 'Renamed' }, t.config.authUrl);
      assert.equal(renamed.statusCode, 303, renamed.body);
      assert.equal((await t.services.sso.connections.get(theirs.connection.id))?.name, 'Renamed');
      assert.ok((await t.services.sso.connections.list(organizationId)).every((connection) => connection.name !== 'Renamed'));
      const token = await postForm(t.app, browser, '/sso/setup/scim-token', {}, t.config.authUrl);
      assert.equal(token.statusCode, 200);
      const issued = /id="scim-token"[^>]*value="([^"]+)"/.exec(token.body)?.[1] ?? '';
      assert.equal((await t.services.scimTokens.authenticate(issued))?.organizationId, other.organization.id);
    });
  });
}

describe('SSO setup link pages are rate-limited per IP', () => {
  const t = useTestApp({ name: 'sqlite', skip: false, create: async () => (await backends())[0]!.create() }, { env: { RATE_LIMIT_SSO_SETUP: '3/1m' } });
  it('answers 429 with Retry-After past the limit', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await t.app.inject({ url: '/sso/setup' })).statusCode, 404);
    const limited = await t.app.inject({ url: `/sso/setup?token=${'B'.repeat(43)}` });
    assert.equal(limited.statusCode, 429);
    assert.ok(Number(limited.headers['retry-after']) > 0);
  });
});
