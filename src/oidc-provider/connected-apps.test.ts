/**
 * Connected apps, as people and administrators see and stop them: what each app holds (scopes in
 * the consent page's words, APIs), when access was given and when this person last let it in (a
 * code flow, then a refresh an hour later on a moved clock), and revoking it (its refresh token,
 * its remembered consent and its last use go; audited) from the dashboard or by an administrator.
 */
import { after, before, describe, it } from 'node:test';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { backends } from '../../test/helpers/databases.ts';
import { createTestApp, createUser } from '../../test/helpers/app.ts';
import { authorize, Browser, createRpUser, discover, freePort, hiddenValue, registerClient, USER, type ListeningApp } from '../../test/helpers/oidc-rp.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { newClientId } from '../oidc-clients/clients.service.ts';
import { ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT } from './token-exchange.ts';
import type { TestDatabase } from '../../test/helpers/databases.ts';
import { readMessages } from '../i18n/catalog.ts';
import { escapeHtml } from '../i18n/translator.ts';

const MESSAGES = readMessages(join(import.meta.dirname, 'messages'));
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A message of this module as a page prints it (escaped, `{name}`s filled in), ready for a RegExp. */
function shown(key: string, values: Record<string, string> = {}, locale: 'en' | 'de' = 'en'): string {
  const text = MESSAGES[locale]![`oidc-provider.${key}`];
  assert.ok(text !== undefined, key);
  return escapeRegExp(escapeHtml(text.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? `{${name}}`)));
}

const REDIRECT = 'http://127.0.0.1:1/callback';
const API = 'http://127.0.0.1:1/api';
/** APIs agents exchange the app's tokens for (token exchange). */
const API_B = 'http://127.0.0.1:1/b';
const API_C = 'http://127.0.0.1:1/c';
const HOUR = 3_600_000;
const ADMIN = { email: 'grace.admin@example.com', password: 'correct horse battery staple 1906' };

for (const backend of await backends()) {
  describe(`Connected apps on ${backend.name}`, { skip: backend.skip }, () => {
    // Gatehouse's clock, moved by the tests (the provider keeps its own time for token lifetimes).
    let offset = 0;
    const clock = () => Date.now() + offset;
    let database: TestDatabase | undefined;
    let t: ListeningApp;
    let userId: string;
    let adminId: string;
    before(async () => {
      database = await backend.create();
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const app = await createTestApp(database, { env: { AUTH_URL: url, OIDC_PROVIDER_RESOURCES: `${API}=read:items write:items, ${API_B}=read:items, ${API_C}=read:items` }, clock });
      await app.app.listen({ port, host: '127.0.0.1' });
      t = { ...app, url };
      userId = (await createRpUser(t)).id;
      adminId = (await createUser(t.services, { ...ADMIN, roles: ['ADMIN'] })).id;
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    /** The app's code flow for the suite's user, with an API and a refresh token; its tokens. */
    async function connect(name: string) {
      const { clientId, clientSecret } = await registerClient(t, { name, redirectUris: [REDIRECT] });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      const flow = await authorize(browser, config, { redirectUri: REDIRECT, scope: 'openid email read:items offline_access', resource: API });
      const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }, { resource: API });
      assert.ok(tokens.refresh_token);
      return { clientId, config, browser, tokens };
    }

    const appOf = async (clientId: string) => (await t.services.oidcProvider.connectedApps(userId)).find((app) => app.clientId === clientId);

    it('tells when access was given and when this person last used it: after the code flow, and after a refresh an hour later', async () => {
      const before = clock();
      const { clientId, config, tokens } = await connect('Time keeper');
      const after = clock();
      const first = await appOf(clientId);
      assert.ok(first, 'listed');
      assert.equal(first.name, 'Time keeper');
      assert.equal(first.reviewed, true, 'an administrator registered it');
      assert.equal(first.host, null);
      assert.deepEqual(first.scopes, ['openid', 'email', 'offline_access'], 'in the consent page’s order');
      assert.deepEqual(first.resources, { [API]: ['read:items'] });
      assert.ok(first.grantedAt !== null && first.grantedAt >= before - 1000 && first.grantedAt <= after, `granted ${first.grantedAt} in [${before}, ${after}]`);
      assert.ok(first.lastUsedAt !== null && first.lastUsedAt >= before && first.lastUsedAt <= after, `used ${first.lastUsedAt} in [${before}, ${after}]`);

      offset += HOUR;
      const refreshedAt = clock();
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, { resource: API });
      assert.ok(refreshed.access_token);
      const later = await appOf(clientId);
      assert.ok(later?.lastUsedAt !== null && later!.lastUsedAt! >= refreshedAt && later!.lastUsedAt! <= clock(), 'the refresh is its last use');
      assert.equal(later!.grantedAt, first.grantedAt, 'access was given once');

      // Another person's use is not this person's.
      const other = await createUser(t.services, { email: 'other.person@example.com', password: USER.password });
      assert.deepEqual(await t.services.oidcProvider.connectedApps(other.id), []);
    });

    it("revoking ends the grant's refresh token, the remembered consent and the last use, audited with who did it", async () => {
      const { clientId, config, tokens } = await connect('Revoked app');
      assert.ok(await t.services.oidcProvider.findConsent(userId, clientId), 'consent remembered');
      assert.equal(await t.services.oidcProvider.disconnect(userId, clientId, { ...SYSTEM_SOURCE, actorUserId: userId }), true);
      await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), (error: client.ResponseBodyError) => error.error === 'invalid_grant');
      assert.equal(await t.services.oidcProvider.findConsent(userId, clientId), undefined, 'consent forgotten');
      assert.equal(await appOf(clientId), undefined, 'no longer connected');
      const uses = await t.services.storage.db.selectFrom('oidc_app_uses').selectAll().where('user_id', '=', userId).where('client_id', '=', clientId).execute();
      assert.deepEqual(uses, []);
      const { events } = await t.services.audit.listEvents({ userId, type: 'oidc_app.disconnected', limit: 10 });
      assert.ok(events.some((event) => event.details?.clientId === clientId && event.actorUserId === userId));
      assert.equal(await t.services.oidcProvider.disconnect(userId, clientId, SYSTEM_SOURCE), false, 'nothing left to revoke');
    });

    it('shows on the dashboard each app with what it may do (in the consent words), its API, when it was allowed and last used', async () => {
      const { clientId, browser } = await connect('Dashboard app');
      const html = await (await browser.fetch('/dashboard')).text();
      const section = html.slice(html.indexOf('<section class="section" aria-labelledby="connected-apps-heading">'));
      assert.match(section, /<h3 class="app-name">Dashboard app<\/h3>/);
      assert.match(section, new RegExp(`<li>${shown('consent.scope.email')}</li>`));
      assert.match(section, new RegExp(`<li>${shown('consent.scope.offline_access')}</li>`));
      assert.match(section, new RegExp(`<li>${shown('consent.resource', { resource: API, scopes: 'read:items' })}</li>`));
      const used = (await appOf(clientId))!.lastUsedAt!;
      assert.match(section, new RegExp(`<dt>${shown('connectedApps.lastUsed')}</dt>\\s*<dd><time datetime="${new Date(used).toISOString()}">`));
      assert.match(section, new RegExp(`<dt>${shown('connectedApps.granted')}</dt>\\s*<dd><time datetime="`));
      // In another language, the same words as its consent page.
      const german = await (await browser.fetch('/dashboard?lang=de')).text();
      assert.match(german, new RegExp(`<dt>${shown('connectedApps.lastUsed', {}, 'de')}</dt>`));
    });

    it('shows a client that registered itself, and one named by its metadata document, by their hosts as not reviewed; both disconnect from the dashboard', async () => {
      const registeredId = newClientId();
      const registered = await t.services.oidcClients.createRegistered({ name: 'Self-made agent', redirectUris: ['http://127.0.0.1:7/cb'], isPublic: true }, { clientId: registeredId, clientSecret: undefined }, { ...SYSTEM_SOURCE, via: 'registration' });
      assert.ok(registered.ok);
      const documentId = 'https://agents.example.com/clients/helper.json';
      for (const clientId of [registeredId, documentId]) {
        await t.services.oidcProvider.rememberConsent(userId, { clientId, scopes: new Set(['openid', 'email']), resources: {} });
      }
      const apps = await t.services.oidcProvider.connectedApps(userId);
      const byId = new Map(apps.map((app) => [app.clientId, app]));
      assert.deepEqual([byId.get(registeredId)?.name, byId.get(registeredId)?.reviewed, byId.get(registeredId)?.host], ['Self-made agent', false, '127.0.0.1:7']);
      assert.deepEqual([byId.get(documentId)?.name, byId.get(documentId)?.reviewed, byId.get(documentId)?.host], ['agents.example.com', false, 'agents.example.com']);

      const browser = new Browser(t.url);
      await browser.signIn(USER.email, USER.password);
      const html = await (await browser.fetch('/dashboard')).text();
      // Marked prominently: a badge by the name, and the host it is known by in an alert under it.
      const unreviewed = (name: string, host: string) =>
        new RegExp(`<h3 class="app-name">${escapeRegExp(name)} <span class="badge">${shown('connectedApps.notReviewed')}</span></h3>\\s*<p class="alert alert-info">[^<]*<strong>${escapeRegExp(host)}</strong>`);
      assert.match(html, unreviewed('agents.example.com', 'agents.example.com'));
      assert.match(html, unreviewed('Self-made agent', '127.0.0.1:7'));
      assert.match(html, new RegExp(`<dt>${shown('connectedApps.lastUsed')}</dt>\\s*<dd>${shown('connectedApps.notUsed')}</dd>`));
      const action = `/oidc/connected-apps/${encodeURIComponent(documentId)}/disconnect`;
      assert.ok(html.includes(`action="${action}"`), 'the form names the https client_id, encoded');
      const csrfToken = hiddenValue(html, 'csrfToken');
      for (const clientId of [documentId, registeredId]) {
        const response = await browser.post(`/oidc/connected-apps/${encodeURIComponent(clientId)}/disconnect`, { csrfToken });
        assert.equal(response.status, 303);
        assert.equal(await t.services.oidcProvider.findConsent(userId, clientId), undefined, `${clientId} disconnected`);
      }
      const after = await (await browser.fetch('/dashboard')).text();
      assert.doesNotMatch(after, /agents\.example\.com|Self-made agent/);
    });

    it('shows the agents acting for the person with the app’s tokens (token exchange, nested act chains); revoking the app stops them', async () => {
      const { clientId, browser, tokens } = await connect('Delegating app');
      const agentClient = await registerClient(t, { name: 'Helper agent', grantTypes: ['client_credentials'], exchangeResources: [API_B] });
      const agent = await discover(t.url, agentClient.clientId, agentClient.clientSecret);
      const downstreamClient = await registerClient(t, { name: 'Downstream', grantTypes: [], exchangeResources: [API_C] });
      const downstream = await discover(t.url, downstreamClient.clientId, downstreamClient.clientSecret);
      const exchange = (config: client.Configuration, subjectToken: string, resource: string) =>
        client.genericGrantRequest(config, TOKEN_EXCHANGE_GRANT, { subject_token: subjectToken, subject_token_type: ACCESS_TOKEN_TYPE, resource, scope: 'read:items' });
      const byAgent = await exchange(agent, tokens.access_token, API_B);
      await exchange(downstream, byAgent.access_token, API_C);

      const app = await appOf(clientId);
      assert.deepEqual(
        app?.delegations.map((chain) => [chain.actors, chain.audience]),
        [[['Helper agent', 'Downstream'], API_C], [['Helper agent'], API_B]],
        'each chain, the first actor first, newest first',
      );
      const html = await (await browser.fetch('/dashboard')).text();
      assert.match(html, new RegExp(`<dt>${shown('connectedApps.delegations')}</dt>`));
      assert.match(html, new RegExp(`<li>${shown('connectedApps.delegation', { actors: 'Helper agent → Downstream', api: API_C })} \\(<time datetime="`));

      // One click on the app stops its agents: their exchanges need its grant alive.
      await t.services.oidcProvider.disconnect(userId, clientId, { ...SYSTEM_SOURCE, actorUserId: userId });
      await assert.rejects(exchange(agent, tokens.access_token, API_B), (error: client.ResponseBodyError) => error.error === 'invalid_request');
    });

    describe("on the administrators' page of the user", () => {
      let admin: Browser;
      before(async () => {
        admin = new Browser(t.url);
        await admin.signIn(ADMIN.email, ADMIN.password);
      });

      it('shows the same details, and an ADMIN revokes one with the form: its refresh token ends, audited as the admin', async () => {
        const { clientId, config, tokens } = await connect('Admin sees');
        const page = await admin.fetch(`/admin/users/${userId}`);
        assert.equal(page.status, 200);
        const html = await page.text();
        const section = html.slice(html.indexOf('<section aria-labelledby="oidc-admin-apps-heading">'));
        assert.match(section, new RegExp(`<h2 id="oidc-admin-apps-heading">${shown('admin.connectedApps.heading')}</h2>`));
        assert.match(section, /<h3 class="app-name">Admin sees<\/h3>/);
        assert.match(section, new RegExp(`<li>${shown('consent.scope.email')}</li>`));
        assert.match(section, new RegExp(`<dt>${shown('connectedApps.lastUsed')}</dt>\\s*<dd><time datetime="`));
        const action = `/admin/users/${userId}/connected-apps/${encodeURIComponent(clientId)}/revoke`;
        assert.ok(section.includes(`action="${action}"`));
        assert.match(section, new RegExp(`aria-label="${shown('admin.connectedApps.revokeApp', { app: 'Admin sees' })}">${shown('admin.connectedApps.revoke')}</button>`));

        const revoked = await admin.post(action, { csrfToken: hiddenValue(html, 'csrfToken') });
        assert.equal(revoked.status, 303);
        assert.equal(revoked.headers.get('location'), `/admin/users/${userId}#oidc-admin-apps-heading`);
        await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), (error: client.ResponseBodyError) => error.error === 'invalid_grant');
        assert.equal(await appOf(clientId), undefined);
        const { events } = await t.services.audit.listEvents({ userId, type: 'oidc_app.disconnected', limit: 10 });
        assert.ok(events.some((event) => event.details?.clientId === clientId && event.actorUserId === adminId), 'audited with the admin as actor');
      });

      it('refuses a form without its CSRF token, a user who is not an ADMIN (form and API), and an unknown user', async () => {
        const { clientId, browser } = await connect('Still here');
        const action = `/admin/users/${userId}/connected-apps/${encodeURIComponent(clientId)}/revoke`;
        const forged = await admin.fetch(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' }, body: '' });
        assert.equal(forged.status, 403, 'no CSRF token, from another site');
        const tokenless = await admin.post(action, {});
        assert.equal(tokenless.status, 403, 'no CSRF token, from our own origin');
        const dashboard = await (await browser.fetch('/dashboard')).text();
        const byUser = await browser.post(action, { csrfToken: hiddenValue(dashboard, 'csrfToken') });
        assert.equal(byUser.status, 403, 'the user is no ADMIN');
        const token = ((await (await fetch(`${t.url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: USER.email, password: USER.password }) })).json()) as { token: string }).token;
        const byApi = await fetch(`${t.url}/api/admin/users/${userId}/connected-apps/${encodeURIComponent(clientId)}/revoke`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
        assert.equal(byApi.status, 403);
        assert.ok(await appOf(clientId), 'still connected');

        const adminToken = ((await (await fetch(`${t.url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })).json()) as { token: string }).token;
        const unknown = await fetch(`${t.url}/api/admin/users/nobody/connected-apps/${encodeURIComponent(clientId)}/revoke`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}` } });
        assert.equal(unknown.status, 404);
        const byAdminApi = await fetch(`${t.url}/api/admin/users/${userId}/connected-apps/${encodeURIComponent(clientId)}/revoke`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}` } });
        assert.equal(byAdminApi.status, 200);
        assert.deepEqual(await byAdminApi.json(), { ok: true, revoked: true });
        assert.equal(await appOf(clientId), undefined);
      });
    });
  });
}
