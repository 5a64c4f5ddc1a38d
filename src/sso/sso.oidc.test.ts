/**
 * An OpenID Connect connection to a second provider on loopback (test/helpers/oauth-peers.ts: discovery,
 * a strict token endpoint with PKCE, signed ID tokens), over the real app on SQLite and PostgreSQL:
 * sign-in with JIT membership, the flow bound to the browser that started it, used once, and a
 * tampered ID token refused with nothing created. The client secret is stored sealed.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { startOidcPeer, type OidcPeer } from '../../test/helpers/oauth-peers.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { modulesWith, testDomainsModule } from './sso.test-helpers.ts';
import { ssoFlowCookie } from './sso.routes.ts';
import type { Connection } from './sso.model.ts';

const verified = new Map<string, string>();

for (const backend of await backends()) {
  describe(`SSO over OpenID Connect (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend, { modules: modulesWith(testDomainsModule(verified)), env: { SSO_ALLOW_PRIVATE_TARGETS: 'true' } });
    const suffix = `${backend.name}-${Date.now()}`;
    const domain = `globex-${suffix}.test`;
    let peer: OidcPeer;
    let connection: Connection;
    let organizationId: string;

    before(async () => {
      peer = await startOidcPeer({ clientId: 'globex-gatehouse', clientSecret: 'globex-secret-value-0123456789' });
      const owner = await createUser(t.services, { email: `owner-${suffix}@example.com`, password: 'correct horse battery staple' });
      const org = await t.services.organizations.create({ name: 'Globex' }, owner.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      organizationId = org.organization.id;
      verified.set(domain, organizationId);
      const created = await t.services.sso.connections.create(organizationId, { protocol: 'oidc', name: 'Globex IdP', issuer: peer.issuer, clientId: peer.clientId, clientSecret: peer.clientSecret }, SYSTEM_SOURCE);
      assert.ok(created.ok, JSON.stringify(created));
      connection = created.connection;
    });
    after(async () => peer?.close());

    /** Starts at our route, follows the provider's auto-approving authorize endpoint; the callback URL and the browser. */
    async function throughProvider() {
      const browser = await formBrowser(t.app);
      const started = await postForm(t.app, browser, `/sso/${connection.id}/start`, { callbackUrl: '/dashboard?via=oidc' }, new URL(t.config.authUrl).origin);
      assert.equal(started.statusCode, 303, started.body);
      const authorize = new URL(started.headers.location as string);
      assert.equal(authorize.origin, new URL(peer.issuer).origin);
      assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authorize.searchParams.get('redirect_uri'), `${t.config.authUrl}/sso/oidc/${connection.id}/callback`);
      const answer = await fetch(authorize, { redirect: 'manual' });
      const callback = new URL(answer.headers.get('location')!);
      return { browser, callback: `${callback.pathname}${callback.search}` };
    }
    const callbackWith = (url: string, cookie: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });

    it('signs in: a new account just in time, a member, the callback kept; the secret is stored sealed', async () => {
      const email = `grace@${domain}`;
      peer.signInAs({ sub: `grace-${suffix}`, email, email_verified: true, name: 'Grace Hopper' });
      const { browser, callback } = await throughProvider();
      const response = await callbackWith(callback, browser.jar.header());
      assert.equal(response.statusCode, 303, response.body);
      assert.equal(response.headers.location, '/dashboard?via=oidc');
      assert.match(String(response.headers['set-cookie']), /gatehouse\.session=/);
      const user = await t.services.users.findUserByEmail(email);
      assert.equal(user?.name, 'Grace Hopper');
      assert.notEqual(user?.emailVerifiedAt, null);
      assert.equal((await t.services.organizations.get(organizationId, { userId: user!.id }))?.role, 'MEMBER');
      const rows = await sql<{ secret_box: string; settings: string }>`select secret_box, settings from sso_connections where id = ${connection.id}`.execute(t.services.storage.db);
      assert.equal(rows.rows[0]!.secret_box.includes(peer.clientSecret), false);
      assert.equal(rows.rows[0]!.settings.includes(peer.clientSecret), false);
      const events = await sql<{ details: string | Record<string, unknown> }>`select details from audit_events where type = 'sso.connection_created'`.execute(t.services.storage.db);
      assert.equal(JSON.stringify(events.rows).includes(peer.clientSecret), false);
    });

    it('refuses a callback in another browser (no flow cookie) and a replayed one', async () => {
      const email = `mallory@${domain}`;
      peer.signInAs({ sub: `mallory-${suffix}`, email, email_verified: true, name: 'Mallory' });
      const { browser, callback } = await throughProvider();
      const elsewhere = await callbackWith(callback, `${ssoFlowCookie(t.config)}=someone-elses`);
      assert.match(String(elsewhere.headers.location), /^\/auth\/error/);
      const replay = await callbackWith(callback, browser.jar.header());
      assert.match(String(replay.headers.location), /^\/auth\/error/, 'the flow was used up by the first attempt');
      assert.equal(await t.services.users.findUserByEmail(email), null);
    });

    it('refuses an ID token for another audience, an unverified address for an existing account, an address outside the verified domains', async () => {
      peer.signInAs({ sub: `eve-${suffix}`, email: `eve@${domain}`, email_verified: true, name: 'Eve' });
      peer.tamperNextIdToken({ claims: { aud: 'another-client' } });
      const tampered = await throughProvider();
      const refused = await callbackWith(tampered.callback, tampered.browser.jar.header());
      assert.match(String(refused.headers.location), /^\/auth\/error/);
      assert.equal(await t.services.users.findUserByEmail(`eve@${domain}`), null);

      await createUser(t.services, { email: `ops@${domain}`, password: 'correct horse battery staple' });
      peer.signInAs({ sub: `ops-${suffix}`, email: `ops@${domain}`, email_verified: false, name: 'Ops' });
      const unverified = await throughProvider();
      const notLinked = await callbackWith(unverified.callback, unverified.browser.jar.header());
      assert.equal(notLinked.headers.location, '/auth/error?error=OAuthAccountNotLinked');

      // The provider vouches for an address outside the organization's verified domains: no account, no membership.
      const stranger = `stranger-${suffix}@elsewhere.test`;
      peer.signInAs({ sub: `stranger-${suffix}`, email: stranger, email_verified: true, name: 'Stranger' });
      const outside = await throughProvider();
      assert.match(String((await callbackWith(outside.callback, outside.browser.jar.header())).headers.location), /^\/auth\/error/);
      assert.equal(await t.services.users.findUserByEmail(stranger), null);
    });
  });
}
