/**
 * Gatehouse as an OpenID Provider against a hostile relying party, browser or network, over real
 * HTTP on loopback, on SQLite and PostgreSQL, with openid-client and raw requests as an attacker
 * would send them: redirect URIs one character off, PKCE missing, downgraded or wrong, codes
 * replayed or redeemed by another client, bad client credentials, implicit and password grants,
 * open redirects through logout, consent skipped or forged, tokens for one API used at another,
 * Host header poisoning, odd bodies, markup in parameters, and a disabled user's leftovers.
 *
 * Known deviations are marked `todo` with what the provider does instead.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import * as client from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { createUser } from '../../test/helpers/app.ts';
import { authorize as authorizeIn, Browser, createRpUser, discover, follow, hiddenValue, registerClient, useListeningApp, USER, type ListeningApp, type AuthorizeOptions } from '../../test/helpers/oidc-rp.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const REDIRECT = 'http://127.0.0.1:1/callback';
const POST_LOGOUT = 'http://127.0.0.1:1/signed-out';
const API_A = 'http://127.0.0.1:1/api-a';
const API_B = 'http://127.0.0.1:1/api-b';
const UNKNOWN_API = 'http://127.0.0.1:1/api-c';

/** What a browser sends as Accept on a navigation. */
const NAVIGATION = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
const FORM = 'application/x-www-form-urlencoded';
const REDIRECT_URI_MESSAGE = 'The app asked to return to an address it has not registered.';

/** The shared authorization walk, for this suite's app (its redirect URI). */
const authorize = (browser: Browser, config: client.Configuration, options: Omit<AuthorizeOptions, 'redirectUri'> = {}) => authorizeIn(browser, config, { redirectUri: REDIRECT, ...options });

function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

/** A raw POST to a provider endpoint, as any HTTP client can send it. */
async function post(t: ListeningApp, path: string, body: string | undefined, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: Record<string, unknown> | null; text: string }> {
  const response = await fetch(`${t.url}${path}`, { method: 'POST', body, headers, redirect: 'manual' });
  const text = await response.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = null;
  }
  return { status: response.status, headers: response.headers, json, text };
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** A GET with headers fetch would not let us set (Host), over plain node:http. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { method: 'GET', headers }, (incoming) => {
      let body = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => (body += chunk));
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body }));
      incoming.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

/** Every string in a JSON document that looks like a URL. */
function urlsIn(value: unknown): string[] {
  if (typeof value === 'string') return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(urlsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(urlsIn);
  return [];
}

/** Our error page (layout, known message, page CSP), never a redirect. */
function assertErrorPage(response: Response, html: string, message: string | RegExp, label: string): void {
  assert.equal(response.status, 400, label);
  assert.equal(response.headers.get('location'), null, `${label}: no redirect`);
  assert.equal(response.headers.get('refresh'), null, `${label}: no refresh`);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/, label);
  assert.match(response.headers.get('content-security-policy') ?? '', /script-src 'none'/, label);
  assert.match(html, /<title>Sign-in problem · Gatehouse<\/title>/, label);
  assert.match(html, /class="site-header"/, `${label}: our layout`);
  if (typeof message === 'string') assert.ok(html.includes(message), `${label}: ${html.slice(0, 800)}`);
  else assert.match(html, message, label);
}

function isBodyError(code: string) {
  return (error: unknown) => {
    assert.ok(error instanceof client.ResponseBodyError, `expected a ResponseBodyError, got ${String(error)}`);
    assert.equal(error.error, code, `${error.error}: ${error.error_description}`);
    return true;
  };
}

const isInvalidClient = (error: unknown) => {
  assert.ok(error instanceof client.WWWAuthenticateChallengeError, `expected a WWWAuthenticateChallengeError, got ${String(error)}`);
  assert.equal(error.response.status, 401);
  assert.equal(error.cause[0]?.parameters.error, 'invalid_client');
  return true;
};

for (const backend of await backends()) {
  describe(`OpenID Provider against hostile requests on ${backend.name}`, { skip: backend.skip }, () => {
    const server = useListeningApp(backend, { OIDC_PROVIDER_RESOURCES: `${API_A}=read:a write:a, ${API_B}=read:b` });
    before(() => server.setup().then(() => createRpUser(server.get(), ['EDITOR'])).then(() => undefined));
    after(() => server.teardown());

    async function firstParty(name: string, extra: Parameters<typeof registerClient>[1] = {}) {
      const t = server.get();
      const registered = await registerClient(t, { name, redirectUris: [REDIRECT], postLogoutRedirectUris: [POST_LOGOUT], isFirstParty: true, ...extra });
      return { ...registered, config: await discover(t.url, registered.clientId, registered.clientSecret) };
    }

    describe('redirect URIs', () => {
      const OFF_BY_ONE = [
        ['a trailing slash', `${REDIRECT}/`],
        ['another port', 'http://127.0.0.1:2/callback'],
        ['another case in the path', 'http://127.0.0.1:1/Callback'],
        ['an extra query', `${REDIRECT}?next=https://evil.example`],
        ['an empty query', `${REDIRECT}?`],
        ['another name for the host', 'http://localhost:1/callback'],
        ['a percent-encoded path', 'http://127.0.0.1:1/%63allback'],
        ['a dot segment', 'http://127.0.0.1:1/x/../callback'],
        ['another host', 'https://evil.example/callback'],
      ] as const;

      it('never redirects to a redirect_uri one character off the registered one: our error page, 400', async () => {
        const t = server.get();
        const app = await firstParty('Exact redirect');
        const publicApp = await registerClient(t, { name: 'Exact public', redirectUris: [REDIRECT], isPublic: true, isFirstParty: true });
        const publicConfig = await discover(t.url, publicApp.clientId);
        // Signed in and with a provider session: a good URI would be redirected to at once.
        const browser = new Browser(t.url);
        const ok = await authorize(browser, app.config);
        assert.ok(ok.callback.searchParams.has('code'));
        for (const [what, uri] of OFF_BY_ONE) {
          for (const [kind, config] of [['confidential', app.config], ['public', publicConfig]] as const) {
            const url = client.buildAuthorizationUrl(config, {
              redirect_uri: uri,
              scope: 'openid',
              state: 'st',
              code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
              code_challenge_method: 'S256',
            });
            const response = await browser.fetch(url.pathname + url.search, { headers: NAVIGATION });
            const html = await response.text();
            assertErrorPage(response, html, REDIRECT_URI_MESSAGE, `${kind}, ${what}`);
            assert.match(html, /INVALID_REDIRECT_URI/);
            assert.ok(!html.includes(uri), `${kind}, ${what}: the URI is not echoed`);
          }
        }
      });

      it('refuses an off-by-one redirect_uri pushed with PAR too (no request_uri to use)', async () => {
        const t = server.get();
        const app = await firstParty('PAR redirect');
        const response = await post(t, '/oidc/par', form({ client_id: app.clientId, response_type: 'code', scope: 'openid', redirect_uri: `${REDIRECT}/`, code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' }), {
          authorization: basic(app.clientId, app.clientSecret!),
          'content-type': FORM,
        });
        assert.equal(response.status, 400, response.text);
        // PAR answers invalid_request (RFC 9126 uses the RFC 6749 codes), naming the redirect_uri.
        assert.equal(response.json?.error, 'invalid_request');
        assert.match(String(response.json?.error_description), /redirect_uri/);
        assert.equal(response.json?.request_uri, undefined);
      });
    });

    describe('PKCE', () => {
      it('sends a public client without code_challenge, or with method plain, back with invalid_request', async () => {
        const t = server.get();
        const { clientId } = await registerClient(t, { name: 'Public PKCE', redirectUris: [REDIRECT], isPublic: true, isFirstParty: true });
        const config = await discover(t.url, clientId);
        const verifier = client.randomPKCECodeVerifier();
        const cases: Array<[string, Record<string, string>]> = [
          ['no code_challenge', {}],
          ['code_challenge_method=plain', { code_challenge: verifier, code_challenge_method: 'plain' }],
          ['code_challenge without a method', { code_challenge: await client.calculatePKCECodeChallenge(verifier) }],
        ];
        for (const [what, params] of cases) {
          const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', state: 'st', nonce: 'n', ...params });
          const response = await fetch(url, { redirect: 'manual', headers: NAVIGATION });
          await response.body?.cancel();
          assert.equal(response.status, 303, what);
          const location = new URL(response.headers.get('location')!);
          assert.equal(`${location.origin}${location.pathname}`, REDIRECT, what);
          assert.equal(location.searchParams.get('error'), 'invalid_request', what);
          assert.equal(location.searchParams.get('state'), 'st', what);
          assert.equal(location.searchParams.get('iss'), t.url, what);
          assert.equal(location.searchParams.get('code'), null, what);
        }
        const metadata = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as { code_challenge_methods_supported: string[] };
        assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
      });

      it('lets a confidential client sign in without PKCE', async () => {
        const t = server.get();
        const app = await firstParty('No PKCE');
        const flow = await authorize(new Browser(t.url), app.config, { pkce: false });
        assert.equal(flow.callback.searchParams.get('error'), null);
        const tokens = await client.authorizationCodeGrant(app.config, flow.callback, { expectedState: flow.state, expectedNonce: flow.nonce });
        assert.equal(tokens.claims()!.aud, app.clientId);
      });

      it('answers invalid_grant to a token request with a missing or wrong code_verifier (public and confidential)', async () => {
        const t = server.get();
        const confidential = await firstParty('Verifier confidential');
        const pub = await registerClient(t, { name: 'Verifier public', redirectUris: [REDIRECT], isPublic: true, isFirstParty: true });
        const publicConfig = await discover(t.url, pub.clientId);
        for (const [kind, config, auth] of [
          ['confidential', confidential.config, { authorization: basic(confidential.clientId, confidential.clientSecret!) }],
          ['public', publicConfig, {}],
        ] as const) {
          const clientId = kind === 'public' ? pub.clientId : confidential.clientId;
          for (const [what, verifier] of [
            ['missing', undefined],
            ['wrong', client.randomPKCECodeVerifier()],
          ] as const) {
            const flow = await authorize(new Browser(t.url), config);
            const code = flow.callback.searchParams.get('code')!;
            const fields: Record<string, string> = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...(verifier !== undefined && { code_verifier: verifier }) };
            if (kind === 'public') fields.client_id = clientId;
            const response = await post(t, '/oidc/token', form(fields), { 'content-type': FORM, ...auth });
            assert.equal(response.status, 400, `${kind}, ${what}`);
            assert.equal(response.json?.error, 'invalid_grant', `${kind}, ${what}: ${response.text}`);
            assert.equal(response.json?.access_token, undefined);
            // The same through openid-client (which sends what it is given).
            await assert.rejects(
              client.authorizationCodeGrant(config, flow.callback, { expectedState: flow.state, expectedNonce: flow.nonce, ...(verifier !== undefined && { pkceCodeVerifier: verifier }) }),
              isBodyError('invalid_grant'),
            );
          }
        }
      });
    });

    describe('authorization codes', () => {
      it('refuses a code used twice and revokes the access and refresh tokens its first use gave', async () => {
        const t = server.get();
        const app = await firstParty('Replay');
        const flow = await authorize(new Browser(t.url), app.config, { scope: 'openid email offline_access' });
        const checks = { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce };
        const tokens = await client.authorizationCodeGrant(app.config, flow.callback, checks);
        assert.ok(tokens.refresh_token);
        assert.equal((await client.tokenIntrospection(app.config, tokens.access_token)).active, true);
        assert.equal((await client.tokenIntrospection(app.config, tokens.refresh_token)).active, true);

        await assert.rejects(client.authorizationCodeGrant(app.config, flow.callback, checks), isBodyError('invalid_grant'));

        assert.equal((await client.tokenIntrospection(app.config, tokens.access_token)).active, false, 'the access token of the first use is revoked');
        assert.equal((await client.tokenIntrospection(app.config, tokens.refresh_token)).active, false, 'the refresh token of the first use is revoked');
        await assert.rejects(client.refreshTokenGrant(app.config, tokens.refresh_token), isBodyError('invalid_grant'));
        await assert.rejects(client.fetchUserInfo(app.config, tokens.access_token, tokens.claims()!.sub));
      });

      it('refuses a code of client A redeemed by client B with its own valid secret', async () => {
        const t = server.get();
        const a = await firstParty('Client A');
        const b = await firstParty('Client B');
        const flow = await authorize(new Browser(t.url), a.config);
        await assert.rejects(
          client.authorizationCodeGrant(b.config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }),
          isBodyError('invalid_grant'),
        );
        const raw = await post(t, '/oidc/token', form({ grant_type: 'authorization_code', code: flow.callback.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: flow.codeVerifier }), {
          authorization: basic(b.clientId, b.clientSecret!),
          'content-type': FORM,
        });
        assert.equal(raw.status, 400);
        assert.equal(raw.json?.error, 'invalid_grant');
        assert.equal(raw.json?.access_token, undefined);
      });

      it('answers 401 invalid_client to a wrong client secret, an unknown client_id and a secret sent the unregistered way', async () => {
        const t = server.get();
        const app = await firstParty('Secret');
        const other = await firstParty('Other secret');
        const flow = await authorize(new Browser(t.url), app.config);
        const checks = { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce };

        const wrongSecret = await discover(t.url, app.clientId, 'not-the-secret');
        await assert.rejects(client.authorizationCodeGrant(wrongSecret, flow.callback, checks), isInvalidClient);
        const othersSecret = await discover(t.url, app.clientId, other.clientSecret);
        await assert.rejects(client.authorizationCodeGrant(othersSecret, flow.callback, checks), isInvalidClient);
        const unknown = await discover(t.url, 'no-such-client', app.clientSecret);
        await assert.rejects(client.authorizationCodeGrant(unknown, flow.callback, checks), isInvalidClient);

        const code = flow.callback.searchParams.get('code')!;
        const grant = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: flow.codeVerifier };
        for (const [what, fields, headers] of [
          ['an overlong client_id', grant, { authorization: basic('x'.repeat(5000), 'y') }],
          ['client_secret_post with a wrong secret', { ...grant, client_id: app.clientId, client_secret: 'nope' }, {}],
          ['no secret at all for a confidential client', { ...grant, client_id: app.clientId }, {}],
          ['the secret hash instead of the secret', grant, { authorization: basic(app.clientId, (await t.services.oidcClients.providerMetadata(app.clientId))!.client_secret as string) }],
        ] as const) {
          const response = await post(t, '/oidc/token', form(fields), { 'content-type': FORM, ...headers });
          assert.equal(response.status, 401, `${what}: ${response.text}`);
          assert.equal(response.json?.error, 'invalid_client', what);
          assert.equal(response.json?.access_token, undefined, what);
        }

        // None of that spent the code: the real client still redeems it. (client_secret_post with the
        // right secret is accepted too: docs/openid-provider.md offers both ways of sending it.)
        const tokens = await client.authorizationCodeGrant(app.config, flow.callback, checks);
        assert.equal(tokens.claims()!.aud, app.clientId);
      });
    });

    describe('flows and grants that are not offered', () => {
      it('answers unsupported_response_type to response_type=token, id_token and hybrid ones, with no token anywhere', async () => {
        const t = server.get();
        const app = await firstParty('Implicit');
        const browser = new Browser(t.url);
        await authorize(browser, app.config);
        for (const responseType of ['token', 'id_token', 'id_token token', 'code id_token', 'code token', 'none']) {
          const query = form({ client_id: app.clientId, response_type: responseType, redirect_uri: REDIRECT, scope: 'openid', state: 'st', nonce: 'n' });
          const response = await browser.fetch(`/oidc/auth?${query}`, { headers: NAVIGATION });
          await response.body?.cancel();
          assert.equal(response.status, 303, responseType);
          const location = new URL(response.headers.get('location')!);
          assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
          const answer = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
          assert.equal(answer.get('error'), 'unsupported_response_type', `${responseType}: ${location.href}`);
          assert.equal(answer.get('state'), 'st');
          for (const leak of ['access_token', 'id_token', 'code']) assert.equal(answer.get(leak), null, `${responseType}: no ${leak}`);
        }
      });

      it('answers unsupported_grant_type to the password and implicit grants at the token endpoint', async () => {
        const t = server.get();
        const app = await firstParty('Password grant');
        // Token exchange is supported, for clients whose exchange policy allows it (oidc-provider.token-exchange.test.ts).
        for (const grantType of ['password', 'implicit', 'urn:ietf:params:oauth:grant-type:jwt-bearer']) {
          const response = await post(t, '/oidc/token', form({ grant_type: grantType, username: USER.email, password: USER.password, scope: 'openid' }), {
            authorization: basic(app.clientId, app.clientSecret!),
            'content-type': FORM,
          });
          assert.equal(response.status, 400, grantType);
          assert.equal(response.json?.error, 'unsupported_grant_type', grantType);
        }
      });
    });

    describe('RP-initiated logout', () => {
      it('never redirects to a post_logout_redirect_uri that is not registered exactly: an error page, 400', async () => {
        const t = server.get();
        const app = await firstParty('Logout exact');
        const browser = new Browser(t.url);
        const flow = await authorize(browser, app.config, { scope: 'openid' });
        const tokens = await client.authorizationCodeGrant(app.config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
        const bad = ['https://evil.example/signed-out', `${POST_LOGOUT}/`, 'http://127.0.0.1:2/signed-out', `${POST_LOGOUT}?x=1`, 'http://127.0.0.1:1/Signed-out', REDIRECT, 'javascript:alert(1)'];
        for (const uri of bad) {
          for (const [how, params] of [
            ['client_id', { client_id: app.clientId }],
            ['id_token_hint', { id_token_hint: tokens.id_token! }],
          ] as const) {
            const response = await browser.fetch(`/oidc/session/end?${form({ ...params, post_logout_redirect_uri: uri, state: 'bye' })}`, { headers: NAVIGATION });
            const html = await response.text();
            assertErrorPage(response, html, /INVALID_REQUEST/, `${uri} with ${how}`);
            assert.ok(!html.includes(uri.replace(/&/g, '&amp;')) && !html.includes(uri), `${uri}: not echoed`);
            assert.doesNotMatch(response.headers.get('content-security-policy') ?? '', /evil\.example|127\.0\.0\.1:2/);
          }
        }
        // Still signed in: nothing above logged the user out, and the registered URI works.
        assert.equal((await browser.fetch('/api/auth/session')).status, 200);
        const good = await browser.fetch(`/oidc/session/end?${form({ client_id: app.clientId, post_logout_redirect_uri: POST_LOGOUT, state: 'bye' })}`, { headers: NAVIGATION });
        assert.equal(good.status, 200);
        const page = await good.text();
        const confirmed = await browser.post('/oidc/session/end/confirm', { xsrf: hiddenValue(page, 'xsrf'), logout: 'yes' });
        assert.equal(confirmed.status, 303);
        assert.equal(confirmed.headers.get('location'), `${POST_LOGOUT}?state=bye`);
      });

      it('without a client, ignores post_logout_redirect_uri: the browser lands on our signed-out page', async () => {
        const t = server.get();
        const browser = new Browser(t.url);
        const page = await (await browser.fetch(`/oidc/session/end?${form({ post_logout_redirect_uri: 'https://evil.example/out', state: 'x' })}`, { headers: NAVIGATION })).text();
        const confirmed = await browser.post('/oidc/session/end/confirm', { xsrf: hiddenValue(page, 'xsrf'), logout: 'yes' });
        assert.equal(confirmed.status, 303);
        const location = new URL(confirmed.headers.get('location')!, t.url);
        assert.equal(location.origin, t.url);
        const landing = await browser.fetch(location.pathname);
        assert.match(await landing.text(), /<h1>Signed out<\/h1>/);
      });

      it(
        'does not sign a Gatehouse user out without asking when another site sends the browser to the end-session endpoint',
        async () => {
          const t = server.get();
          const browser = new Browser(t.url);
          await browser.signIn(USER.email, USER.password);
          const response = await browser.fetch('/oidc/session/end', { headers: { ...NAVIGATION, 'sec-fetch-site': 'cross-site' } });
          const html = await response.text();
          // What a browser does with the page it got: run its script, or the user presses its one button.
          const xsrf = /name="xsrf" value="([^"]*)"/.exec(html)?.[1];
          const autoSubmit = /document\.forms\[0\]\.submit\(\)/.test(html);
          if (xsrf !== undefined && autoSubmit) await browser.post('/oidc/session/end/confirm', { xsrf, logout: 'yes' });
          // Even a forged post of the provider's own form (no `gatehouse=signout`) leaves Gatehouse alone.
          if (xsrf !== undefined) await browser.post('/oidc/session/end/confirm', { xsrf, logout: 'yes' });
          assert.equal((await browser.fetch('/api/auth/session')).status, 200, 'still signed in to Gatehouse');
          assert.ok(!autoSubmit, 'the page asks the user (our confirmation page), it does not submit itself');
          assert.match(response.headers.get('content-security-policy') ?? '', /script-src 'none'/);
        },
      );
    });

    describe('consent', () => {
      it('answers consent_required to prompt=none from a third-party app the signed-in user has not allowed', async () => {
        const t = server.get();
        const own = await firstParty('Own app');
        const { clientId, clientSecret } = await registerClient(t, { name: 'Silent third party', redirectUris: [REDIRECT] });
        const third = await discover(t.url, clientId, clientSecret);
        const browser = new Browser(t.url);
        // Signed in at the provider (through a first-party app).
        assert.ok((await authorize(browser, own.config)).callback.searchParams.has('code'));
        const url = client.buildAuthorizationUrl(third, {
          redirect_uri: REDIRECT,
          scope: 'openid email',
          prompt: 'none',
          state: 'st',
          nonce: 'n',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        });
        const step = await follow(browser, url.pathname + url.search);
        assert.ok('external' in step, 'sent back to the app, never shown a page');
        const answer = new URL(step.external);
        assert.equal(`${answer.origin}${answer.pathname}`, REDIRECT);
        assert.equal(answer.searchParams.get('error'), 'consent_required');
        assert.equal(answer.searchParams.get('code'), null);
        assert.equal(answer.searchParams.get('state'), 'st');
        assert.equal(await t.services.oidcProvider.findConsent((await t.services.users.findUserByEmail(USER.email))!.id, clientId), undefined);
      });

      it('refuses the consent form posted with another browser\'s CSRF token, from another site, or by another user (403 CSRF_FAILED / error page)', async () => {
        const t = server.get();
        const { clientId, clientSecret } = await registerClient(t, { name: 'Forged consent', redirectUris: [REDIRECT] });
        const config = await discover(t.url, clientId, clientSecret);
        await createUser(t.services, { email: 'eve@example.com', password: USER.password, name: 'Eve' });
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: REDIRECT,
          scope: 'openid email',
          state: 'st',
          nonce: 'n',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        });
        const victim = new Browser(t.url);
        await victim.signIn(USER.email, USER.password);
        const step = await follow(victim, url.pathname + url.search);
        assert.ok('page' in step && step.url.startsWith('/oidc/interaction/'), 'the victim is on the consent page');
        const victimToken = hiddenValue(await step.page.text(), 'csrfToken');

        const eve = new Browser(t.url);
        await eve.signIn('eve@example.com', USER.password);
        const eveStep = await follow(eve, url.pathname + url.search);
        assert.ok('page' in eveStep);
        const eveToken = hiddenValue(await eveStep.page.text(), 'csrfToken');

        const forged = await victim.post(`${step.url}/consent`, { csrfToken: eveToken, decision: 'allow' });
        assert.equal(forged.status, 403);
        assert.equal(((await forged.json()) as { error: string }).error, 'CSRF_FAILED');

        const crossSite = await victim.fetch(`${step.url}/consent`, {
          method: 'POST',
          headers: { 'content-type': FORM, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
          body: form({ csrfToken: victimToken, decision: 'allow' }),
        });
        assert.equal(crossSite.status, 403);
        assert.equal(((await crossSite.json()) as { error: string }).error, 'CSRF_FAILED');

        const noToken = await victim.post(`${step.url}/consent`, { decision: 'allow' });
        assert.equal(noToken.status, 403);
        await noToken.body?.cancel();

        // Eve posting to the victim's interaction with her own cookies: not her interaction.
        const stolen = await eve.post(`${step.url}/consent`, { csrfToken: eveToken, decision: 'allow' });
        assert.equal(stolen.status, 400);
        assert.equal(stolen.headers.get('location'), null);
        assert.match(await stolen.text(), /EXPIRED_LOGIN_REQUEST/);

        // Nothing was granted: the victim is still asked.
        const again = await follow(victim, url.pathname + url.search);
        assert.ok('page' in again && again.url.startsWith('/oidc/interaction/'));
        await again.page.body?.cancel();
        assert.equal(await t.services.oidcProvider.findConsent((await t.services.users.findUserByEmail(USER.email))!.id, clientId), undefined);
      });
    });

    describe('resources', () => {
      it('binds an access token to its API: a token for API A does not verify for API B, and carries only A\'s scopes', async () => {
        const t = server.get();
        const jwks = createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`));
        const machine = await registerClient(t, { name: 'Machine A', grantTypes: ['client_credentials'] });
        const machineConfig = await discover(t.url, machine.clientId, machine.clientSecret);
        const issued = await client.clientCredentialsGrant(machineConfig, { scope: 'read:a read:b', resource: API_A });
        const { payload } = await jwtVerify(issued.access_token, jwks, { issuer: t.url, audience: API_A, typ: 'at+jwt' });
        assert.equal(payload.scope, 'read:a', 'B\'s scope is left out of a token for A');
        await assert.rejects(jwtVerify(issued.access_token, jwks, { issuer: t.url, audience: API_B, typ: 'at+jwt' }), (error: { code?: string }) => error.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED');

        // The same for a user's token from the code flow.
        const app = await firstParty('User of A');
        const flow = await authorize(new Browser(t.url), app.config, { scope: 'openid read:a', resource: API_A });
        const tokens = await client.authorizationCodeGrant(app.config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }, { resource: API_A });
        await jwtVerify(tokens.access_token, jwks, { issuer: t.url, audience: API_A, typ: 'at+jwt' });
        await assert.rejects(jwtVerify(tokens.access_token, jwks, { issuer: t.url, audience: API_B, typ: 'at+jwt' }), (error: { code?: string }) => error.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED');
        // Redeeming the code for B instead of the API it was granted for.
        const other = await authorize(new Browser(t.url), app.config, { scope: 'openid read:a', resource: API_A });
        await assert.rejects(
          client.authorizationCodeGrant(app.config, other.callback, { pkceCodeVerifier: other.codeVerifier, expectedState: other.state, expectedNonce: other.nonce }, { resource: API_B }),
          (error: unknown) => error instanceof client.ResponseBodyError && ['invalid_target', 'invalid_grant'].includes(error.error),
        );
      });

      it('answers invalid_target to a resource that is not configured (authorization and token endpoints)', async () => {
        const t = server.get();
        const app = await firstParty('Unknown API');
        for (const resource of [UNKNOWN_API, `${API_A}/`, t.url, 'https://evil.example/api']) {
          const url = client.buildAuthorizationUrl(app.config, {
            redirect_uri: REDIRECT,
            scope: 'openid',
            state: 'st',
            resource,
            code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
            code_challenge_method: 'S256',
          });
          const response = await fetch(url, { redirect: 'manual', headers: NAVIGATION });
          await response.body?.cancel();
          const location = new URL(response.headers.get('location') ?? 'about:blank');
          assert.equal(`${location.origin}${location.pathname}`, REDIRECT, resource);
          assert.equal(location.searchParams.get('error'), 'invalid_target', resource);
        }
        const machine = await registerClient(t, { name: 'Machine unknown API', grantTypes: ['client_credentials'] });
        const machineConfig = await discover(t.url, machine.clientId, machine.clientSecret);
        await assert.rejects(client.clientCredentialsGrant(machineConfig, { scope: 'read:a', resource: UNKNOWN_API }), isBodyError('invalid_target'));
      });
    });

    describe('Host header poisoning', () => {
      it('names only AUTH_URL in discovery, redirects and errors whatever Host and X-Forwarded-* say', async () => {
        const t = server.get();
        const poisoned = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https', 'x-forwarded-port': '443', forwarded: 'host=evil.example;proto=https' };
        for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
          const response = await rawGet(`${t.url}${path}`, poisoned);
          assert.equal(response.status, 200, path);
          assert.doesNotMatch(response.body, /evil\.example/, path);
          const metadata = JSON.parse(response.body) as Record<string, unknown>;
          assert.equal(metadata.issuer, t.url);
          const urls = urlsIn(metadata);
          assert.ok(urls.length > 5);
          for (const url of urls) assert.ok(url.startsWith(`${t.url}/`) || url === t.url, `${path}: ${url}`);
        }
        const app = await firstParty('Poisoned');
        const query = form({
          client_id: app.clientId,
          response_type: 'code',
          redirect_uri: REDIRECT,
          scope: 'openid',
          state: 'st',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        });
        const toInteraction = await rawGet(`${t.url}/oidc/auth?${query}`, poisoned);
        assert.equal(toInteraction.status, 303);
        const location = String(toInteraction.headers.location);
        assert.doesNotMatch(location, /evil\.example/);
        assert.equal(new URL(location, t.url).origin, t.url);
        const error = await rawGet(`${t.url}/oidc/auth?${query}&prompt=none`, poisoned);
        const errorLocation = new URL(String(error.headers.location));
        assert.equal(errorLocation.searchParams.get('iss'), t.url, 'the iss of an error response is AUTH_URL');
        assert.doesNotMatch(JSON.stringify(error.headers), /evil\.example/);
      });
    });

    describe('client credentials', () => {
      it('refuses client credentials to a public client (registration and token endpoint) and to a client not registered for them', async () => {
        const t = server.get();
        const refused = await t.services.oidcClients.create({ name: 'Public machine', isPublic: true, grantTypes: ['client_credentials'] }, SYSTEM_SOURCE);
        assert.equal(refused.ok, false);
        assert.ok(!refused.ok && refused.problems.some((problem) => problem.reason === 'CLIENT_CREDENTIALS_PUBLIC'));

        const pub = await registerClient(t, { name: 'Public app', redirectUris: [REDIRECT], isPublic: true });
        const publicResponse = await post(t, '/oidc/token', form({ grant_type: 'client_credentials', client_id: pub.clientId, scope: 'read:a', resource: API_A }), { 'content-type': FORM });
        assert.equal(publicResponse.status, 400, publicResponse.text);
        assert.ok(['unauthorized_client', 'invalid_client'].includes(String(publicResponse.json?.error)), publicResponse.text);
        assert.equal(publicResponse.json?.access_token, undefined);

        const app = await firstParty('Code only');
        await assert.rejects(client.clientCredentialsGrant(app.config, { scope: 'read:a', resource: API_A }), (error: unknown) => error instanceof client.ResponseBodyError && error.status === 400);
      });

      it(
        'answers unauthorized_client (RFC 6749 §5.2) to a grant type the client is not registered for',
        async () => {
          const t = server.get();
          const app = await firstParty('Code only, RFC');
          await assert.rejects(client.clientCredentialsGrant(app.config, { scope: 'read:a', resource: API_A }), isBodyError('unauthorized_client'));
          const pub = await registerClient(t, { name: 'Public app, RFC', redirectUris: [REDIRECT], isPublic: true });
          const response = await post(t, '/oidc/token', form({ grant_type: 'client_credentials', client_id: pub.clientId }), { 'content-type': FORM });
          assert.equal(response.json?.error, 'unauthorized_client');
        },
      );
    });

    describe('request bodies', () => {
      it('answers 4xx, never 5xx, to JSON, oversized, malformed and empty bodies at every client endpoint', async () => {
        const t = server.get();
        const machine = await registerClient(t, { name: 'Bodies', grantTypes: ['client_credentials'] });
        const auth = { authorization: basic(machine.clientId, machine.clientSecret!) };
        const endpoints = ['/oidc/token', '/oidc/token/introspection', '/oidc/token/revocation', '/oidc/par', '/oidc/device/auth'];
        // [what, body, headers, whether the body is a valid request for introspection and revocation]
        const bodies: Array<[string, string | undefined, Record<string, string>, boolean?]> = [
          ['a JSON body', JSON.stringify({ grant_type: 'client_credentials', token: 'x' }), { 'content-type': 'application/json' }],
          ['a 100 KB form body', form({ grant_type: 'client_credentials', token: 'x', filler: 'a'.repeat(100 * 1024) }), { 'content-type': FORM }],
          ['a 100 KB JSON body', JSON.stringify({ grant_type: 'client_credentials', filler: 'a'.repeat(100 * 1024) }), { 'content-type': 'application/json' }],
          // Decoded leniently: `token` is "%", which introspection and revocation rightly answer (200).
          ['broken percent-encoding', 'grant_type=%zz&token=%', { 'content-type': FORM }, true],
          ['a duplicated grant_type', 'grant_type=client_credentials&grant_type=refresh_token', { 'content-type': FORM }],
          ['multipart', '--b\r\ncontent-disposition: form-data; name="grant_type"\r\n\r\nclient_credentials\r\n--b--\r\n', { 'content-type': 'multipart/form-data; boundary=b' }],
          ['text/plain', 'grant_type=client_credentials', { 'content-type': 'text/plain' }],
          ['no content type', 'grant_type=client_credentials', {}],
          ['an empty body', '', { 'content-type': FORM }],
        ];
        for (const endpoint of endpoints) {
          for (const [what, body, headers, validForTokenEndpoints] of bodies) {
            const response = await post(t, endpoint, body, { ...auth, ...headers });
            const label = `${endpoint}, ${what}: ${response.status} ${response.text.slice(0, 200)}`;
            if (validForTokenEndpoints === true && /introspection|revocation/.test(endpoint)) assert.ok(response.status < 500, label);
            else assert.ok(response.status >= 400 && response.status < 500, label);
            assert.equal(response.json?.access_token, undefined, label);
            assert.equal(response.json?.active ?? false, false, label);
          }
        }
        const empty = await post(t, '/oidc/token', undefined);
        assert.equal(empty.status, 400);
        assert.equal(empty.json?.error, 'invalid_request');
        const emptyAuthenticated = await post(t, '/oidc/token', undefined, auth);
        assert.equal(emptyAuthenticated.status, 400);
        assert.equal(emptyAuthenticated.json?.error, 'invalid_request');
        // The server is fine afterwards.
        const ok = await post(t, '/oidc/token', form({ grant_type: 'client_credentials', scope: 'read:a', resource: API_A }), { ...auth, 'content-type': FORM });
        assert.equal(ok.status, 200, ok.text);
      });
    });

    describe('markup in parameters', () => {
      it('never echoes attacker input on the provider\'s error pages, which carry our page CSP', async () => {
        const t = server.get();
        const app = await firstParty('Echo');
        const payloads = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "javascript:alert(1)//'"];
        const pages: Array<[string, string]> = [];
        for (const payload of payloads) {
          pages.push(
            ['client_id', `/oidc/auth?${form({ client_id: payload, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid', state: payload })}`],
            ['redirect_uri', `/oidc/auth?${form({ client_id: app.clientId, response_type: 'code', redirect_uri: `${REDIRECT}?${payload}`, scope: payload, state: payload, nonce: payload })}`],
            ['response_type', `/oidc/auth?${form({ client_id: app.clientId, response_type: payload, redirect_uri: payload, scope: 'openid' })}`],
            ['post_logout_redirect_uri', `/oidc/session/end?${form({ client_id: app.clientId, post_logout_redirect_uri: payload, state: payload })}`],
            ['id_token_hint', `/oidc/session/end?${form({ id_token_hint: payload, post_logout_redirect_uri: POST_LOGOUT })}`],
          );
        }
        for (const [what, path] of pages) {
          const response = await fetch(`${t.url}${path}`, { redirect: 'manual', headers: NAVIGATION });
          const html = await response.text();
          assertErrorPage(response, html, /Error code: <code>[A-Z_]+<\/code>/, `${what}: ${path}`);
          assert.doesNotMatch(html, /<script>alert|<img src=x|onerror=|javascript:alert/i, `${what}: ${path}`);
        }
        // Our own interaction routes: an invalid uid is refused, not echoed.
        const interaction = await fetch(`${t.url}/oidc/interaction/${encodeURIComponent('<script>alert(1)</script>')}`, { headers: NAVIGATION, redirect: 'manual' });
        assert.ok(interaction.status >= 400 && interaction.status < 500);
        assert.doesNotMatch(await interaction.text(), /<script>alert/);
      });
    });

    describe('a disabled user', () => {
      it('cannot refresh or redeem a code issued before, and the next authorization asks them to sign in (which they cannot)', async () => {
        const t = server.get();
        const mallory = { email: 'mallory@example.com', password: USER.password };
        const user = await createUser(t.services, { ...mallory, name: 'Mallory' });
        const app = await firstParty('Disabled user app');
        const browser = new Browser(t.url);
        const flow = await authorize(browser, app.config, { scope: 'openid email offline_access', user: mallory });
        const tokens = await client.authorizationCodeGrant(app.config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
        assert.equal(tokens.claims()!.sub, user.id);
        assert.ok(tokens.refresh_token);
        // A code issued but not yet redeemed when the account is disabled.
        const pending = await authorize(browser, app.config, { scope: 'openid' });
        assert.ok(pending.callback.searchParams.has('code'));

        const disabled = await t.services.admin.updateUser(user.id, { disabled: true }, SYSTEM_SOURCE);
        assert.ok(disabled.ok);

        await assert.rejects(client.refreshTokenGrant(app.config, tokens.refresh_token), isBodyError('invalid_grant'));
        await assert.rejects(
          client.authorizationCodeGrant(app.config, pending.callback, { pkceCodeVerifier: pending.codeVerifier, expectedState: pending.state, expectedNonce: pending.nonce }),
          isBodyError('invalid_grant'),
        );
        assert.equal((await client.tokenIntrospection(app.config, tokens.access_token)).active, false);
        await assert.rejects(client.fetchUserInfo(app.config, tokens.access_token, user.id));

        const url = client.buildAuthorizationUrl(app.config, {
          redirect_uri: REDIRECT,
          scope: 'openid',
          state: 'st',
          code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        });
        const step = await follow(browser, url.pathname + url.search);
        assert.ok('page' in step, `not sent to the app: ${'external' in step ? step.external : ''}`);
        assert.match(step.url, /^\/auth\/signin\?callbackUrl=/);
        await step.page.body?.cancel();
        const silent = await follow(browser, `${url.pathname}${url.search}&prompt=none`);
        assert.ok('external' in silent);
        assert.equal(new URL(silent.external).searchParams.get('error'), 'login_required');
        await assert.rejects(browser.signIn(mallory.email, mallory.password), /sign-in failed: 4\d\d/);
      });
    });
  });
}
