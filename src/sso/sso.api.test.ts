/**
 * The SSO management API on SQLite and PostgreSQL: an organization's OWNER or ADMIN manages its
 * connections, a MEMBER or an outsider cannot, a Gatehouse ADMIN manages any; metadata that cannot
 * be read and URLs outside the outbound rules are 422; every change is audited without secrets;
 * answers carry what to paste at the IdP, never a private key or a client secret.
 */
import { describe, it, before, after } from 'node:test';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { api, assertError, uniqueEmail } from '../organizations/organizations.test-helpers.ts';
import { startTestIdp, type TestIdp } from './sso.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  describe(`SSO management API (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend);
    let idp: TestIdp;
    let owner: { id: string; token: string };
    let member: { id: string; token: string };
    let admin: { id: string; token: string };
    let organizationId: string;

    before(async () => {
      idp = await startTestIdp();
      owner = await createSignedInUser(t, { email: uniqueEmail('owner'), password: PASSWORD });
      member = await createSignedInUser(t, { email: uniqueEmail('member'), password: PASSWORD });
      admin = await createSignedInUser(t, { email: uniqueEmail('admin'), password: PASSWORD, roles: ['ADMIN'] });
      const org = await t.services.organizations.create({ name: 'Initech' }, owner.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      organizationId = org.organization.id;
      assert.ok((await t.services.organizations.addMember(organizationId, member.id, 'MEMBER', SYSTEM_SOURCE)).ok);
    });

    it('lets an OWNER create, read, change and delete a SAML connection; audited, no secret in answers or events', async () => {
      const base = `/api/organizations/${organizationId}/sso-connections`;
      const created = await api(t, owner.token).post(base, { protocol: 'saml', name: 'Initech Okta', idpMetadataXml: idp.metadata, groupRoles: [{ group: 'admins', role: 'ADMIN' }] });
      assert.equal(created.statusCode, 201, created.body);
      const body = created.json();
      assert.equal(body.identityProvider.entityId, idp.entityId);
      assert.equal(body.serviceProvider.acsUrl, `${t.config.authUrl}/sso/saml/${body.id}/acs`);
      assert.match(body.serviceProvider.signingCertificate, /BEGIN CERTIFICATE/);
      assert.equal(/PRIVATE KEY/.test(created.body), false);
      assert.equal(body.enforce, false);
      assert.equal(body.idpInitiated, false);

      const listed = await api(t, owner.token).get(base);
      assert.deepEqual(listed.json().connections.map((c: { id: string }) => c.id), [body.id]);
      const changed = await api(t, owner.token).patch(`${base}/${body.id}`, { enforce: true, name: 'Initech SSO' });
      assert.equal(changed.statusCode, 200, changed.body);
      assert.equal(changed.json().enforce, true);
      assert.equal((await api(t, owner.token).delete(`${base}/${body.id}`)).statusCode, 200);
      assertError(await api(t, owner.token).get(`${base}/${body.id}`), 404, 'SSO_CONNECTION_NOT_FOUND');

      const events = await sql<{ type: string; details: unknown; actor_user_id: string | null }>`select type, details, actor_user_id from audit_events where type like 'sso.connection_%' order by created_at`.execute(t.services.storage.db);
      assert.deepEqual(events.rows.map((row) => row.type), ['sso.connection_created', 'sso.connection_updated', 'sso.connection_deleted']);
      assert.ok(events.rows.every((row) => row.actor_user_id === owner.id));
      assert.equal(/PRIVATE KEY|BEGIN CERTIFICATE/.test(JSON.stringify(events.rows)), false);
    });

    it('refuses a MEMBER and an outsider; a Gatehouse ADMIN manages any organization’s', async () => {
      const base = `/api/organizations/${organizationId}/sso-connections`;
      assertError(await api(t, member.token).get(base), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await api(t, member.token).post(base, { protocol: 'saml', name: 'x', idpMetadataXml: idp.metadata }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      const outsider = await createSignedInUser(t, { email: uniqueEmail('outsider'), password: PASSWORD });
      assertError(await api(t, outsider.token).get(base), 404, 'ORGANIZATION_NOT_FOUND');
      assertError(await api(t, owner.token).get('/api/admin/sso-connections'), 403, 'FORBIDDEN');

      const created = await api(t, admin.token).post('/api/admin/sso-connections', { organizationId, protocol: 'oidc', name: 'Initech Entra', issuer: 'https://login.example.com/tenant/v2.0', clientId: 'client-1', clientSecret: 'do-not-show-me-0123456789' });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.body.includes('do-not-show-me'), false);
      assert.equal(created.json().serviceProvider.redirectUri, `${t.config.authUrl}/sso/oidc/${created.json().id}/callback`);
      const all = await api(t, admin.token).get(`/api/admin/sso-connections?organizationId=${organizationId}`);
      assert.ok(all.json().connections.some((c: { id: string }) => c.id === created.json().id));
      const rotated = await api(t, admin.token).patch(`/api/admin/sso-connections/${created.json().id}`, { clientSecret: 'another-secret-0123456789' });
      assert.equal(rotated.statusCode, 200);
      assert.equal((await api(t, admin.token).delete(`/api/admin/sso-connections/${created.json().id}`)).statusCode, 200);
      assertError(await api(t, admin.token).delete(`/api/admin/sso-connections/${created.json().id}`), 404, 'SSO_CONNECTION_NOT_FOUND');
      assertError(await api(t, admin.token).post('/api/admin/sso-connections', { organizationId: 'nope', protocol: 'saml', name: 'x', idpMetadataXml: idp.metadata }), 404, 'ORGANIZATION_NOT_FOUND');
    });

    it('answers 422 for metadata it cannot use and for URLs outside the outbound rules', async () => {
      const base = `/api/organizations/${organizationId}/sso-connections`;
      const owners = api(t, owner.token);
      assertError(await owners.post(base, { protocol: 'saml', name: 'x' }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'saml', name: 'x', idpMetadataXml: '<not xml' }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'saml', name: 'x', idpMetadataXml: `<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${idp.metadata}` }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'saml', name: 'x', idpMetadataXml: idp.metadata.replace(/<ds:X509Certificate>[^<]*<\/ds:X509Certificate>/g, '') }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'saml', name: 'x', idpMetadataUrl: 'http://169.254.169.254/latest/meta-data' }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'saml', name: 'x', idpMetadataUrl: 'http://127.0.0.1:1/metadata' }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'oidc', name: 'x', issuer: 'http://10.0.0.1', clientId: 'a', clientSecret: 'b' }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await owners.post(base, { protocol: 'saml', name: 'x', idpMetadataXml: idp.metadata, groupRoles: [{ group: 'g', role: 'OWNER' }] }), 422, 'VALIDATION_ERROR');
      assertError(await owners.post(base, { protocol: 'ldap', name: 'x' }), 422, 'VALIDATION_ERROR');
      assertError(await owners.get(`${base}/${'x'.repeat(40)}`), 422, 'VALIDATION_ERROR');
    });
  });

  describe(`SSO metadata by URL (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend, { env: { SSO_ALLOW_PRIVATE_TARGETS: 'true' } });
    let server: Server;
    let base: string;
    let metadata: string;
    before(async () => {
      metadata = (await startTestIdp()).metadata;
      server = createServer((request, response) => {
        if (request.url === '/metadata') return void response.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(metadata);
        if (request.url === '/moved') return void response.writeHead(302, { location: '/metadata' }).end();
        response.writeHead(404).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise((resolve) => server.close(resolve)));

    it('reads the IdP metadata from its URL under the outbound rules (no redirect followed)', async () => {
      const admin = await createSignedInUser(t, { email: uniqueEmail('admin'), password: PASSWORD, roles: ['ADMIN'] });
      const org = await t.services.organizations.create({ name: 'Hooli' }, admin.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      const created = await api(t, admin.token).post('/api/admin/sso-connections', { organizationId: org.organization.id, protocol: 'saml', name: 'Hooli', idpMetadataUrl: `${base}/metadata` });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.json().identityProvider.metadataUrl, `${base}/metadata`);
      assertError(await api(t, admin.token).post('/api/admin/sso-connections', { organizationId: org.organization.id, protocol: 'saml', name: 'Hooli', idpMetadataUrl: `${base}/moved` }), 422, 'SSO_INVALID_CONNECTION');
      assertError(await api(t, admin.token).post('/api/admin/sso-connections', { organizationId: org.organization.id, protocol: 'saml', name: 'Hooli', idpMetadataUrl: `${base}/missing` }), 422, 'SSO_INVALID_CONNECTION');
    });
  });
}
