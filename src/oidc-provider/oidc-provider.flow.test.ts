/**
 * Gatehouse as an OpenID Provider, with openid-client as the relying party over real HTTP on
 * loopback, on SQLite and PostgreSQL: discovery and keys, the code flow through our own sign-in
 * and consent pages (driven here by plain form posts), ID token, userinfo, refresh rotation and
 * reuse detection, introspection, revocation, client credentials with a resource-bound JWT, the
 * device flow, RP-initiated logout, and how Gatehouse sign-out ends the provider session.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createProtector } from '../../packages/protect/src/protect.ts';
import { rotateSigningKey } from '../sessions/signing-keys.ts';
import { createUser, TEST_SECRET } from '../../test/helpers/app.ts';
import { totpCode } from '../../test/helpers/totp.ts';
import { SoftAuthenticator } from '../../test/helpers/webauthn.ts';
import type { User } from '../users/user.service.ts';
import { LOCALES } from '../i18n/locales.ts';
import { escapeHtml } from '../i18n/translator.ts';
import { backends } from '../../test/helpers/databases.ts';
import { authorize as authorizeIn, Browser, createRpUser, discover, follow, hiddenValue, registerClient, useListeningApp, USER, type AuthorizeOptions } from '../../test/helpers/oidc-rp.ts';
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { OIDC_ERROR_CODES } from './provider-pages.ts';
import { SCOPES_IN_WORDS } from './oidc.routes.ts';

const REDIRECT = 'http://127.0.0.1:1/callback';
const POST_LOGOUT = 'http://127.0.0.1:1/signed-out';
const API = 'http://127.0.0.1:1/api';

/** The shared authorization walk, for this suite's app: its redirect URI, and by default every scope with a refresh token. */
const authorize = (browser: Browser, config: client.Configuration, options: Omit<AuthorizeOptions, 'redirectUri'> = {}) =>
  authorizeIn(browser, config, { redirectUri: REDIRECT, scope: 'openid email profile roles offline_access', ...options });

for (const backend of await backends()) {
  describe(`OpenID Provider on ${backend.name}`, { skip: backend.skip }, () => {
    const server = useListeningApp(backend, { OIDC_PROVIDER_RESOURCES: `${API}=read:items write:items` });
    let userId: string;
    before(async () => {
      await server.setup();
      userId = (await createRpUser(server.get(), ['EDITOR'])).id;
    });
    after(() => server.teardown());

    it('publishes discovery with the issuer exactly AUTH_URL and the service JWKS', async () => {
      const t = server.get();
      const response = await fetch(`${t.url}/.well-known/openid-configuration`);
      assert.equal(response.status, 200);
      const metadata = (await response.json()) as Record<string, unknown>;
      assert.equal(metadata.issuer, t.url);
      assert.equal(metadata.jwks_uri, `${t.url}/.well-known/jwks.json`);
      assert.equal(metadata.authorization_endpoint, `${t.url}/oidc/auth`);
      assert.deepEqual(metadata.response_types_supported, ['code']);
      assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
      assert.equal(metadata.authorization_response_iss_parameter_supported, true);
      assert.ok((metadata.grant_types_supported as string[]).includes('client_credentials'));
      assert.ok(!(metadata.grant_types_supported as string[]).includes('implicit'));
      assert.ok(!(metadata.grant_types_supported as string[]).includes('password'));
      assert.deepEqual(new Set(metadata.id_token_signing_alg_values_supported as string[]), new Set(['EdDSA', 'RS256']));
      const jwks = (await (await fetch(`${t.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string; alg: string }> };
      const published = new Set(t.services.keys.publicJwks().map((jwk) => jwk.kid));
      assert.deepEqual(new Set(jwks.keys.map((key) => key.kid)), published);
    });

    it('signs a user in to a first-party app with the code flow: ID token, userinfo, refresh rotation and reuse detection', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'First party', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      const { callback, codeVerifier, state, nonce, consentPages } = await authorize(browser, config);
      assert.equal(consentPages, 0, 'no consent page for a first-party app');
      assert.equal(callback.searchParams.get('iss'), t.url, 'RFC 9207 iss in the response');

      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce });
      const claims = tokens.claims()!;
      assert.equal(claims.sub, userId);
      assert.equal(claims.iss, t.url);
      assert.equal(claims.aud, clientId);
      assert.equal(decodeProtectedHeader(tokens.id_token!).alg, 'EdDSA');
      assert.deepEqual(claims.amr, ['pwd'], JSON.stringify(claims));
      const info = await client.fetchUserInfo(config, tokens.access_token, userId);
      assert.equal(info.email, USER.email);
      assert.equal(info.email_verified, true);
      assert.equal(info.name, USER.name);
      assert.deepEqual(info.roles, ['EDITOR']);

      assert.ok(tokens.refresh_token);
      // A copy of the database holds no usable token: codes and tokens are stored by their hash.
      const rows = await t.services.storage.db.selectFrom('oidc_payloads').select(['id', 'payload']).execute();
      for (const secret of [tokens.refresh_token, tokens.access_token, callback.searchParams.get('code')!]) {
        assert.ok(!rows.some((row) => row.id.includes(secret) || row.payload.includes(secret)), 'no token in storage');
      }
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
      assert.ok(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token, 'the refresh token rotates');
      await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token), (error: client.ResponseBodyError) => error.error === 'invalid_grant');
      await assert.rejects(
        client.refreshTokenGrant(config, refreshed.refresh_token!),
        (error: client.ResponseBodyError) => error.error === 'invalid_grant',
        'reusing a rotated token revokes the grant: its successor dies too',
      );
    });

    it('asks a third-party app for consent, remembers it, and shows the app under Connected apps until disconnected', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Third party', redirectUris: [REDIRECT] });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      const first = await authorize(browser, config, { scope: 'openid email' });
      assert.equal(first.consentPages, 1);
      const tokens = await client.authorizationCodeGrant(config, first.callback, { pkceCodeVerifier: first.codeVerifier, expectedState: first.state, expectedNonce: first.nonce });
      assert.equal(tokens.claims()!.sub, userId);

      // Another browser (a new provider session): the consent is remembered.
      const other = new Browser(t.url);
      const second = await authorize(other, config, { scope: 'openid email' });
      assert.equal(second.consentPages, 0, 'remembered');
      const more = await authorize(other, config, { scope: 'openid email profile' });
      assert.equal(more.consentPages, 1, 'asking for more asks again');
      const forced = await authorize(other, config, { scope: 'openid email', extra: { prompt: 'consent' } });
      assert.equal(forced.consentPages, 1, 'prompt=consent asks again, remembered or not');

      const dashboard = await (await browser.fetch('/dashboard')).text();
      assert.match(dashboard, /Connected apps/);
      assert.match(dashboard, /Third party/);
      const csrfToken = hiddenValue(dashboard, 'csrfToken');
      const disconnected = await browser.post(`/oidc/connected-apps/${encodeURIComponent(clientId)}/disconnect`, { csrfToken });
      assert.equal(disconnected.status, 303);
      assert.doesNotMatch(await (await browser.fetch('/dashboard')).text(), /Third party/);
      await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token ?? 'none'));
      const again = await authorize(new Browser(t.url), config, { scope: 'openid email' });
      assert.equal(again.consentPages, 1, 'consent is asked again after disconnecting');
    });

    it('signs ID tokens with RS256 for a client registered for it, with the RSA key of the JWKS', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'RS256 app', redirectUris: [REDIRECT], isFirstParty: true, idTokenSignedResponseAlg: 'RS256' });
      const config = await discover(t.url, clientId, clientSecret);
      const flow = await authorize(new Browser(t.url), config, { scope: 'openid' });
      const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
      const { protectedHeader, payload } = await jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`)), { issuer: t.url, audience: clientId });
      assert.equal(protectedHeader.alg, 'RS256');
      assert.equal(payload.sub, userId);
    });

    it('takes pushed authorization requests (RFC 9126)', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'PAR app', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const codeVerifier = client.randomPKCECodeVerifier();
      const url = await client.buildAuthorizationUrlWithPAR(config, {
        redirect_uri: REDIRECT,
        scope: 'openid email',
        state: 'par-state',
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      });
      assert.ok(url.searchParams.get('request_uri')?.startsWith('urn:ietf:params:oauth:request_uri:'));
      assert.equal(url.searchParams.get('scope'), null, 'the parameters stay with the server');
      const browser = new Browser(t.url);
      await browser.signIn(USER.email, USER.password);
      const step = await follow(browser, url.pathname + url.search);
      assert.ok('external' in step);
      const tokens = await client.authorizationCodeGrant(config, new URL(step.external), { pkceCodeVerifier: codeVerifier, expectedState: 'par-state' });
      assert.equal(tokens.claims()!.sub, userId);
    });

    it('keeps working across a key rotation (the provider is rebuilt with the published keys)', async () => {
      const t = server.get();
      const before = t.services.oidcProvider.provider();
      await rotateSigningKey({ db: t.services.storage.db, authSecret: TEST_SECRET, clock: Date.now });
      await t.services.keys.reload();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Rotation app', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const flow = await authorize(new Browser(t.url), config, { scope: 'openid' });
      const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
      assert.notEqual(t.services.oidcProvider.provider(), before, 'a new provider instance');
      const { protectedHeader } = await jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`)), { issuer: t.url, audience: clientId });
      assert.equal(protectedHeader.kid, t.services.keys.current().kid, 'signed with the key that signs now (the old one, during the activation delay)');
    });

    it('answers response_mode=form_post with a self-posting page that its CSP lets post to the app', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Form post app', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      await browser.signIn(USER.email, USER.password);
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope: 'openid',
        response_mode: 'form_post',
        state: 'st',
        code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      });
      const step = await follow(browser, url.pathname + url.search);
      assert.ok('page' in step);
      const html = await step.page.text();
      assert.match(html, /<form method="post" action="http:\/\/127\.0\.0\.1:1\/callback">/);
      assert.match(html, /name="code" value="[^"]+"/);
      assert.match(html, /name="iss" value="http:\/\/127\.0\.0\.1:\d+"/);
      const csp = step.page.headers.get('content-security-policy') ?? '';
      assert.match(csp, /script-src 'self' 'sha256-[^']+'/);
      assert.match(csp, /form-action 'self' http:\/\/127\.0\.0\.1:1/);
    });

    it('returns access_denied to the app when the user denies', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Denied app', redirectUris: [REDIRECT] });
      const config = await discover(t.url, clientId, clientSecret);
      const { callback } = await authorize(new Browser(t.url), config, { scope: 'openid', consent: 'deny' });
      assert.equal(callback.searchParams.get('error'), 'access_denied');
      assert.equal(callback.searchParams.get('iss'), t.url);
    });

    it('issues resource-bound JWT access tokens (RFC 9068) with roles, introspects and revokes them', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'API app', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const flow = await authorize(new Browser(t.url), config, { scope: 'openid roles read:items offline_access', resource: API });
      const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }, { resource: API });
      const jwks = createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`));
      const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, { issuer: t.url, audience: API, typ: 'at+jwt' });
      assert.equal(protectedHeader.alg, 'EdDSA');
      assert.equal(payload.sub, userId);
      assert.equal(payload.client_id, clientId);
      assert.equal(payload.scope, 'read:items');
      assert.deepEqual(payload.roles, ['EDITOR']);
      // The API verifies it with gatehouse-protect, its resource URL as the audience.
      const protector = createProtector({ issuer: t.url, audience: API });
      const user = await protector.authenticate(new Request(`${API}/items`, { headers: { authorization: `Bearer ${tokens.access_token}` } }));
      assert.deepEqual(
        user && { userId: user.userId, clientId: user.clientId, scopes: user.scopes, roles: user.roles, sessionId: user.sessionId },
        { userId, clientId, scopes: ['read:items'], roles: ['EDITOR'], sessionId: null },
      );
      const elsewhere = createProtector({ issuer: t.url, audience: 'http://127.0.0.1:1/other' });
      assert.equal(await elsewhere.authenticate(new Request(`${API}/items`, { headers: { authorization: `Bearer ${tokens.access_token}` } })), null, 'bound to its API');

      const active = await client.tokenIntrospection(config, tokens.refresh_token!);
      assert.equal(active.active, true);
      // Another client cannot revoke it: refused to a confidential one, and the token lives on.
      const other = await registerClient(t, { name: 'Another app', grantTypes: ['client_credentials'] });
      await assert.rejects(client.tokenRevocation(await discover(t.url, other.clientId, other.clientSecret), tokens.refresh_token!), (error: { error?: string; error_description?: string }) => error.error === 'invalid_request' && /not authorized to revoke/.test(error.error_description ?? ''));
      assert.equal((await client.tokenIntrospection(config, tokens.refresh_token!)).active, true);
      await client.tokenRevocation(config, tokens.refresh_token!);
      assert.equal((await client.tokenIntrospection(config, tokens.refresh_token!)).active, false);
    });

    it('regression (issue 30.6): an access token carries roles only with the roles scope: for an API or opaque, at issue and at refresh', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Roles app', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const jwks = createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`));
      const issue = async (scope: string, resource?: string) => {
        const flow = await authorize(new Browser(t.url), config, { scope, ...(resource !== undefined && { resource }) });
        const checks = { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, ...(scope.split(' ').includes('openid') && { expectedNonce: flow.nonce }) };
        return client.authorizationCodeGrant(config, flow.callback, checks, resource === undefined ? {} : { resource });
      };
      const apiClaims = async (accessToken: string) => (await jwtVerify(accessToken, jwks, { issuer: t.url, audience: API, typ: 'at+jwt' })).payload;

      const without = await issue('openid read:items offline_access', API);
      assert.equal((await apiClaims(without.access_token)).roles, undefined, 'no roles scope: no roles for the API');
      const refreshed = await client.refreshTokenGrant(config, without.refresh_token!, { resource: API });
      assert.equal((await apiClaims(refreshed.access_token)).roles, undefined, 'nor after a refresh');

      const withRoles = await issue('openid roles read:items offline_access', API);
      assert.deepEqual((await apiClaims(withRoles.access_token)).roles, ['EDITOR'], 'the roles scope: roles for the API');
      const narrowed = await client.refreshTokenGrant(config, withRoles.refresh_token!, { resource: API, scope: 'openid read:items' });
      assert.equal((await apiClaims(narrowed.access_token)).roles, undefined, 'a refresh that leaves the roles scope out gets none');
      const full = await client.refreshTokenGrant(config, narrowed.refresh_token!, { resource: API });
      assert.deepEqual((await apiClaims(full.access_token)).roles, ['EDITOR'], 'a refresh with the roles scope reads them again');

      // Without the openid scope, as an MCP client asks.
      const oauthOnly = await issue('read:items roles', API);
      assert.deepEqual((await apiClaims(oauthOnly.access_token)).roles, ['EDITOR'], 'roles asked for without openid');

      // Opaque tokens (no resource): what introspection tells.
      const opaque = await issue('openid email');
      assert.equal((await client.tokenIntrospection(config, opaque.access_token)).roles, undefined, 'opaque, no roles scope');
      const opaqueWithRoles = await issue('openid roles');
      assert.deepEqual((await client.tokenIntrospection(config, opaqueWithRoles.access_token)).roles, ['EDITOR'], 'opaque, the roles scope');
    });

    it('regression (issue 30.6): the consent page says, in every language, that roles asked for with an API go to that API, and lists no roles when none are asked', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Roles consent app', redirectUris: [REDIRECT] });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      await browser.signIn(USER.email, USER.password);
      const consentPage = async (scope: string): Promise<string> => {
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT,
          scope,
          resource: API,
          state: 'st',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        });
        const step = await follow(browser, url.pathname + url.search);
        assert.ok('page' in step && step.url.startsWith('/oidc/interaction/'), 'the consent page');
        await step.page.body?.cancel();
        return step.url;
      };
      const translator = (locale: (typeof LOCALES)[number]) => t.services.translations.translator(locale);

      const page = await consentPage('openid roles read:items');
      for (const locale of LOCALES) {
        browser.cookies.set('gatehouse.lang', locale);
        const html = await (await browser.fetch(page)).text();
        const item = escapeHtml(translator(locale).t('oidc-provider.consent.scope.rolesForResource', { resource: API }));
        assert.ok(html.includes(`<li>${item}</li>`), `${locale}: ${html.slice(html.indexOf('<ul'), html.indexOf('</ul>'))}`);
      }

      browser.cookies.set('gatehouse.lang', 'en');
      const withoutRoles = await (await browser.fetch(await consentPage('openid read:items'))).text();
      assert.ok(!withoutRoles.includes(escapeHtml(translator('en').t('oidc-provider.consent.scope.roles'))), 'no roles asked: none listed');
      assert.ok(!withoutRoles.includes(escapeHtml(translator('en').t('oidc-provider.consent.scope.rolesForResource', { resource: API }))), 'no roles asked: none passed on');
    });

    it('gives a machine a token by client credentials: client_id and scope, no user', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Machine', grantTypes: ['client_credentials'] });
      const config = await discover(t.url, clientId, clientSecret);
      const tokens = await client.clientCredentialsGrant(config, { scope: 'read:items', resource: API });
      const { payload } = await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`)), { issuer: t.url, audience: API, typ: 'at+jwt' });
      assert.equal(payload.client_id, clientId);
      assert.equal(payload.scope, 'read:items');
      assert.equal(payload.sub, clientId);
      assert.equal(payload.roles, undefined);
      const machine = await createProtector({ issuer: t.url, audience: API }).authenticate(new Request(`${API}/items`, { headers: { authorization: `Bearer ${tokens.access_token}` } }));
      assert.equal(machine, null, 'a machine token speaks for no user');
      await assert.rejects(client.clientCredentialsGrant(config, { scope: 'read:items', resource: 'http://127.0.0.1:1/other' }), (error: client.ResponseBodyError) => error.error === 'invalid_target');
      const wrong = await discover(t.url, clientId, 'not-the-secret');
      await assert.rejects(
        client.clientCredentialsGrant(wrong, { scope: 'read:items', resource: API }),
        (error: client.WWWAuthenticateChallengeError) => error.response.status === 401 && error.cause[0]?.parameters.error === 'invalid_client',
      );
    });

    it('signs a device in with the device flow and the /device page', async () => {
      const t = server.get();
      const { clientId } = await registerClient(t, { name: 'TV app', isPublic: true, grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], isFirstParty: true });
      const config = await discover(t.url, clientId);
      const device = await client.initiateDeviceAuthorization(config, { scope: 'openid email' });
      assert.equal(device.verification_uri, `${t.url}/device`);

      const browser = new Browser(t.url);
      await browser.signIn(USER.email, USER.password);
      const input = await browser.fetch('/device');
      assert.equal(input.status, 200);
      const form = await input.text();
      const submitted = await browser.post('/device', { xsrf: hiddenValue(form, 'xsrf'), user_code: device.user_code });
      let step = submitted.status === 200 ? { page: submitted, url: '/device' } : await follow(browser, submitted.headers.get('location')!);
      assert.ok('page' in step);
      let html = await step.page.text();
      if (!/name="confirm"/.test(html)) {
        assert.fail(`expected the confirmation page, got ${html.slice(0, 300)}`);
      }
      const confirmed = await browser.post('/device', { xsrf: hiddenValue(html, 'xsrf'), user_code: hiddenValue(html, 'user_code'), confirm: 'yes' });
      step = await follow(browser, confirmed.headers.get('location') ?? '/device');
      assert.ok('page' in step);
      html = await step.page.text();
      assert.match(html, /Device connected/);

      const tokens = await client.pollDeviceAuthorizationGrant(config, device);
      assert.equal(tokens.claims()!.sub, userId);
    });

    it('ends the provider session when the user signs out of Gatehouse, and RP-initiated logout signs out of Gatehouse', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Logout app', redirectUris: [REDIRECT], postLogoutRedirectUris: [POST_LOGOUT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      const flow = await authorize(browser, config, { scope: 'openid' });
      const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });

      // prompt=none works while signed in to Gatehouse…
      const silent = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', prompt: 'none', state: 's', nonce: 'n', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
      const silentOk = await follow(browser, silent.pathname + silent.search);
      assert.ok('external' in silentOk && new URL(silentOk.external).searchParams.has('code'));
      // …and not after signing out of Gatehouse.
      const signOutPage = await (await browser.fetch('/auth/signout')).text();
      const signedOut = await browser.post('/api/auth/signout', { csrfToken: hiddenValue(signOutPage, 'csrfToken') });
      assert.equal(signedOut.status, 303);
      const silentAfter = await follow(browser, silent.pathname + silent.search);
      assert.ok('external' in silentAfter);
      assert.equal(new URL(silentAfter.external).searchParams.get('error'), 'login_required');

      // Sign in again, then log out from the app: Gatehouse's session ends with it.
      const again = await authorize(browser, config, { scope: 'openid' });
      const second = await client.authorizationCodeGrant(config, again.callback, { pkceCodeVerifier: again.codeVerifier, expectedState: again.state, expectedNonce: again.nonce });
      const logoutUrl = client.buildEndSessionUrl(config, { id_token_hint: second.id_token!, post_logout_redirect_uri: POST_LOGOUT, state: 'bye' });
      const question = await browser.fetch(logoutUrl.pathname + logoutUrl.search);
      assert.equal(question.status, 200);
      const page = await question.text();
      assert.match(question.headers.get('content-security-policy') ?? '', /form-action 'self' http:\/\/127\.0\.0\.1:1/);
      const confirmed = await browser.post('/oidc/session/end/confirm', { xsrf: hiddenValue(page, 'xsrf'), gatehouse: hiddenValue(page, 'gatehouse'), logout: 'yes' });
      assert.equal(confirmed.status, 303);
      const landing = new URL(confirmed.headers.get('location')!);
      assert.equal(`${landing.origin}${landing.pathname}`, POST_LOGOUT);
      assert.equal(landing.searchParams.get('state'), 'bye');
      const session = await browser.fetch('/api/auth/session');
      assert.equal(session.status, 401, 'the Gatehouse session ended with the logout');
      assert.ok(tokens.id_token);
    });

    it('answers its own pages (Koa) in the browser’s language: the remembered choice, else Accept-Language; never the URL’s error code', async () => {
      const t = server.get();
      // The device page, from Accept-Language (a regional variant finds its language).
      const device = await fetch(`${t.url}/device`, { headers: { 'accept-language': 'de-CH, en;q=0.5' } });
      assert.equal(device.status, 200);
      assert.equal(device.headers.get('content-language'), 'de');
      assert.match(device.headers.get('content-security-policy') ?? '', /script-src 'none'/);
      const deviceHtml = await device.text();
      assert.match(deviceHtml, /<html lang="de" dir="ltr">/);
      assert.match(deviceHtml, /<title>Gerät verbinden · Gatehouse<\/title>/);
      assert.match(deviceHtml, /<h1>Gerät verbinden<\/h1>/);
      assert.match(deviceHtml, /<label for="user_code">Code<\/label>/);
      assert.doesNotMatch(deviceHtml, /hreflang=/, 'no language switcher: the provider’s URLs take no ?lang=');

      // The logout question: the language chosen on our pages (its cookie) wins over Accept-Language.
      const logout = await fetch(`${t.url}/oidc/session/end`, { headers: { cookie: 'gatehouse.lang=ja', 'accept-language': 'de' } });
      assert.equal(logout.status, 200);
      assert.equal(logout.headers.get('content-language'), 'ja');
      const logoutHtml = await logout.text();
      assert.match(logoutHtml, /<html lang="ja"/);
      assert.match(logoutHtml, /<h1>サインアウト<\/h1>/);
      assert.ok(logoutHtml.includes('Gatehouse からサインアウトしますか？'), logoutHtml);

      // The provider's error page: its own code, in words; a code in the URL is never shown.
      const query = new URLSearchParams({ client_id: 'no-such-app', response_type: 'code', scope: 'openid', redirect_uri: REDIRECT, error: 'INJECTED_CODE' });
      const error = await fetch(`${t.url}/oidc/auth?${query}`, { headers: { 'accept-language': 'fr' } });
      assert.equal(error.status, 400);
      assert.equal(error.headers.get('content-language'), 'fr');
      const errorHtml = await error.text();
      assert.match(errorHtml, /<html lang="fr"/);
      assert.match(errorHtml, /<h1>Problème de connexion<\/h1>/);
      assert.ok(errorHtml.includes('L’application n’est pas enregistrée auprès de Gatehouse.'), errorHtml);
      assert.match(errorHtml, /Code d’erreur ?: <code>INVALID_CLIENT<\/code>/);
      assert.ok(!errorHtml.includes('INJECTED_CODE'));

      // Without a language asked for: English.
      const english = await fetch(`${t.url}/device`);
      assert.equal(english.headers.get('content-language'), 'en');
      assert.match(await english.text(), /<html lang="en"[^>]*>[\s\S]*<h1>Connect a device<\/h1>/);
    });

    it('shows the consent page, its error page and Connected apps in the language of the request', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Sprachtest', redirectUris: [REDIRECT] });
      const config = await discover(t.url, clientId, clientSecret);
      const browser = new Browser(t.url);
      browser.cookies.set('gatehouse.lang', 'de');
      await browser.signIn(USER.email, USER.password);
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope: 'openid email',
        state: 'st',
        nonce: 'n',
        code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      });
      const step = await follow(browser, url.pathname + url.search);
      assert.ok('page' in step && step.url.startsWith('/oidc/interaction/'), 'the consent page');
      assert.equal(step.page.headers.get('content-language'), 'de');
      const consent = await step.page.text();
      assert.match(consent, /<html lang="de"/);
      assert.match(consent, /<title>Sprachtest zulassen\? · Gatehouse<\/title>/);
      assert.match(consent, /<h1>Sprachtest möchte Ihr Gatehouse-Konto verwenden<\/h1>/);
      assert.ok(consent.includes('<li>Ihre E-Mail-Adresse sehen und ob sie bestätigt ist</li>'), consent);
      assert.ok(consent.includes('<code>http://127.0.0.1:1</code>'), 'names where the answer goes');
      assert.match(consent, /<button class="button" type="submit" name="decision" value="allow">Zulassen<\/button>/);

      // An interaction that is not there: our error page, in Japanese.
      const missing = await fetch(`${t.url}/oidc/interaction/no-such-interaction`, { headers: { 'accept-language': 'ja' } });
      assert.equal(missing.status, 400);
      assert.equal(missing.headers.get('content-language'), 'ja');
      const missingHtml = await missing.text();
      assert.match(missingHtml, /<h1>サインインの問題<\/h1>/);
      assert.match(missingHtml, /EXPIRED_LOGIN_REQUEST/);

      const allowed = await browser.post(`${step.url}/consent`, { csrfToken: hiddenValue(consent, 'csrfToken'), decision: 'allow' });
      assert.equal(allowed.status, 303);
      const dashboard = await browser.fetch('/dashboard?lang=es');
      const html = await dashboard.text();
      assert.match(html, /<h2 id="connected-apps-heading">Aplicaciones conectadas<\/h2>/);
      assert.match(html, /aria-label="Desconectar Sprachtest">Desconectar<\/button>/);
    });

    describe('a password or second-factor change', () => {
      let serial = 0;
      /** A user of their own (a change must not touch the suite's user), signed in in `browser` only. */
      async function newUser() {
        serial += 1;
        const credentials = { email: `change-${serial}@example.com`, password: `${USER.password} ${serial}` };
        const user = await createUser(server.get().services, { ...credentials, name: 'Grace Hopper' });
        return { ...credentials, user, browser: new Browser(server.get().url) };
      }
      /** The app's refresh token for the user signed in (or signing in) in `browser`, checked live. */
      async function connect(browser: Browser, user: { email: string; password: string }, config: client.Configuration): Promise<string> {
        const flow = await authorize(browser, config, { scope: 'openid offline_access', user });
        const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
        assert.equal((await client.tokenIntrospection(config, tokens.refresh_token!)).active, true);
        return tokens.refresh_token!;
      }
      async function app(name: string): Promise<client.Configuration> {
        const t = server.get();
        const { clientId, clientSecret } = await registerClient(t, { name, redirectUris: [REDIRECT], isFirstParty: true, grantTypes: ['authorization_code', 'refresh_token'] });
        return discover(t.url, clientId, clientSecret);
      }
      async function assertEnded(config: client.Configuration, refreshToken: string, label: string): Promise<void> {
        assert.equal((await client.tokenIntrospection(config, refreshToken)).active, false, `${label}: introspection`);
        await assert.rejects(
          client.refreshTokenGrant(config, refreshToken),
          (error: unknown) => error instanceof client.ResponseBodyError && error.status === 400 && error.error === 'invalid_grant',
          `${label}: refreshing answers 400 invalid_grant`,
        );
      }
      const source = (actorUserId: string | null) => ({ actorUserId, ip: '127.0.0.1', userAgent: null });
      async function addPasskey(user: User) {
        const t = server.get();
        const options = await t.services.passkeys.registrationOptions(user);
        assert.ok(options.ok);
        const added = await t.services.passkeys.register(user, new SoftAuthenticator({ origin: t.url }).register(options.options), { source: source(user.id), backup: t.services.mfa });
        assert.ok(added.ok, JSON.stringify(added));
        return added.passkey;
      }

      it('regression (issue 30.2): refreshing at the token endpoint after a password change from a session that ended no other answers 400 invalid_grant', async () => {
        const t = server.get();
        const { email, password, user, browser } = await newUser();
        const config = await app('Password change app');
        const refreshToken = await connect(browser, { email, password }, config);
        assert.equal((await t.services.sessions.listSessions(user.id)).length, 1, 'the browser holds the only session');

        const { csrfToken } = (await (await browser.fetch('/api/auth/csrf')).json()) as { csrfToken: string };
        const changed = await browser.fetch('/api/auth/change-password', {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: browser.origin, 'sec-fetch-site': 'same-origin', 'x-csrf-token': csrfToken },
          body: JSON.stringify({ currentPassword: password, newPassword: 'violet quasar trombone lighthouse 6120' }),
        });
        assert.equal(changed.status, 200, await changed.clone().text());
        assert.equal((await t.services.sessions.listSessions(user.id)).length, 1, 'no other session ended: the change ended none');
        await assertEnded(config, refreshToken, 'after the password change');
      });

      it('regression (issue 30.2): Connected apps says beforehand, in every language, that a password or second-factor change signs the user out of the apps', async () => {
        const t = server.get();
        const { email, password, browser } = await newUser();
        await connect(browser, { email, password }, await app('Warned app'));
        for (const locale of LOCALES) {
          const html = await (await browser.fetch(`/dashboard?lang=${locale}`)).text();
          const section = html.slice(html.indexOf('id="connected-apps-heading"'));
          assert.match(section, /Warned app/, locale);
          const warning = escapeHtml(t.services.translations.translator(locale).t('oidc-provider.connectedApps.endsOnChange'));
          assert.ok(section.slice(0, section.indexOf('Warned app')).includes(warning), `${locale}: the warning comes before the apps`);
        }
      });

      it('regression (issue 30.2): adding an authenticator app ends the apps’ grants and refresh tokens', async () => {
        const t = server.get();
        const { email, password, user, browser } = await newUser();
        const config = await app('TOTP app');
        const refreshToken = await connect(browser, { email, password }, config);
        const setup = await t.services.mfa.beginTotpSetup(user);
        assert.ok(setup.ok);
        assert.ok((await t.services.mfa.enableTotp(user, totpCode(setup.secret, Date.now()), source(user.id))).ok);
        await assertEnded(config, refreshToken, 'after adding an authenticator app');
      });

      it('regression (issue 30.2): adding a passkey ends the apps’ grants and refresh tokens', async () => {
        const { email, password, user, browser } = await newUser();
        const config = await app('Passkey app');
        const refreshToken = await connect(browser, { email, password }, config);
        await addPasskey(user);
        await assertEnded(config, refreshToken, 'after adding a passkey');
      });

      it('regression (issue 30.2): removing a second factor, renewing recovery codes and an administrator’s reset end the apps’ grants and refresh tokens', async () => {
        const t = server.get();
        const { email, password, user, browser } = await newUser();
        const config = await app('Factor removal app');
        // Signed in before the factors exist: the session stays, and the app connects through it each time.
        await browser.signIn(email, password);
        const setup = await t.services.mfa.beginTotpSetup(user);
        assert.ok(setup.ok);
        const enabled = await t.services.mfa.enableTotp(user, totpCode(setup.secret, Date.now()), source(user.id));
        assert.ok(enabled.ok);
        const passkey = await addPasskey(user);

        let refreshToken = await connect(browser, { email, password }, config);
        const renewed = await t.services.mfa.regenerateRecoveryCodes(user, enabled.recoveryCodes[0], source(user.id));
        assert.ok(renewed.ok);
        await assertEnded(config, refreshToken, 'after renewing the recovery codes');

        refreshToken = await connect(browser, { email, password }, config);
        assert.ok((await t.services.mfa.disableTotp(user, renewed.recoveryCodes[0], source(user.id))).ok);
        await assertEnded(config, refreshToken, 'after removing the authenticator app');

        refreshToken = await connect(browser, { email, password }, config);
        assert.ok(await t.services.passkeys.remove(user, passkey.id, source(user.id)));
        await assertEnded(config, refreshToken, 'after removing a passkey');

        await addPasskey(user);
        refreshToken = await connect(browser, { email, password }, config);
        await t.services.mfa.resetFactors(user, source(null));
        await assertEnded(config, refreshToken, 'after an administrator reset the second factors');
      });
    });

    it('revokes the grants and refresh tokens of a user whose sessions all end', async () => {
      const t = server.get();
      const { clientId, clientSecret } = await registerClient(t, { name: 'Revoked app', redirectUris: [REDIRECT], isFirstParty: true });
      const config = await discover(t.url, clientId, clientSecret);
      const flow = await authorize(new Browser(t.url), config, { scope: 'openid offline_access' });
      const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
      assert.equal((await client.tokenIntrospection(config, tokens.refresh_token!)).active, true);
      await t.services.sessions.endAllSessions(userId, { reason: 'TEST' });
      assert.equal((await client.tokenIntrospection(config, tokens.refresh_token!)).active, false);
      await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!));
    });
  });
}

describe('OpenID Provider page texts', () => {
  it('has a message for every provider error code and scope whose key the pages build from it', () => {
    const english = readMessages(join(import.meta.dirname, 'messages')).en!;
    for (const code of [...OIDC_ERROR_CODES, 'default']) assert.ok(Object.hasOwn(english, `oidc-provider.error.message.${code}`), code);
    for (const scope of SCOPES_IN_WORDS) assert.ok(Object.hasOwn(english, `oidc-provider.consent.scope.${scope}`), scope);
  });
});
