/**
 * Dynamic client registration (RFC 7591): off by default; with OIDC_PROVIDER_REGISTRATION_TOKEN, a
 * caller presenting that initial access token registers a client that then signs users in like any
 * other, under the registry's rules (never first-party, secret stored only as its hash), and
 * registrations are rate-limited per IP.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { backends } from '../../test/helpers/databases.ts';
import { Browser, createRpUser, discover, follow, hiddenValue, listeningApp, USER, type ListeningApp } from '../../test/helpers/oidc-rp.ts';
import type { TestDatabase } from '../../test/helpers/databases.ts';

const TOKEN = 'registration-token-0123456789abcdefghijklmnop';
const REDIRECT = 'https://rp.example/callback';

async function register(t: ListeningApp, body: unknown, token: string | null = TOKEN): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${t.url}/oidc/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token !== null && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

for (const backend of await backends()) {
  describe(`dynamic client registration on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: ListeningApp;
    let off: ListeningApp;
    before(async () => {
      database = await backend.create();
      t = await listeningApp(database, { OIDC_PROVIDER_REGISTRATION_TOKEN: TOKEN, RATE_LIMIT_OIDC_REGISTRATION: '6/1h' });
      await createRpUser(t);
    });
    after(async () => {
      await t?.close();
      await off?.close();
      await database?.drop();
    });

    it('is off without OIDC_PROVIDER_REGISTRATION_TOKEN: no endpoint in discovery, 404 or refusal at /oidc/reg', async () => {
      const otherDatabase = await backend.create();
      try {
        off = await listeningApp(otherDatabase);
        const metadata = (await (await fetch(`${off.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
        assert.equal(metadata.registration_endpoint, undefined);
        const response = await register(off, { redirect_uris: [REDIRECT] });
        assert.equal(response.status, 404);
        assert.equal(response.json.error, 'NOT_FOUND');
        // Like a path nobody serves; an explicit OIDC_PROVIDER_REGISTRATION=off is the same mode (config test).
        const unknown = await fetch(`${off.url}/oidc/no-such-endpoint`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        assert.deepEqual({ status: response.status, json: response.json }, { status: unknown.status, json: await unknown.json() });
        assert.equal(await off.services.oidcClients.list().then((list) => list.length), 0);
      } finally {
        await off.close();
        await otherDatabase.drop();
      }
    });

    it('refuses a missing or wrong initial access token', async () => {
      assert.equal((await register(t, { redirect_uris: [REDIRECT] }, null)).status, 401);
      assert.equal((await register(t, { redirect_uris: [REDIRECT] }, `${TOKEN}x`)).status, 401);
    });

    it('registers a client that signs a user in, with consent (never first-party), its secret kept only as a hash', async () => {
      const { status, json } = await register(t, { client_name: 'Registered RP', redirect_uris: [REDIRECT], grant_types: ['authorization_code'] });
      assert.equal(status, 201, JSON.stringify(json));
      const clientId = String(json.client_id);
      const clientSecret = String(json.client_secret);
      assert.ok(clientSecret.length >= 40);
      const stored = await t.services.storage.db.selectFrom('oidc_clients').selectAll().where('id', '=', clientId).executeTakeFirstOrThrow();
      assert.notEqual(stored.secret_hash, clientSecret);
      assert.ok(!JSON.stringify(stored).includes(clientSecret), 'the secret is not stored');
      assert.equal((await t.services.oidcClients.show(clientId))?.isFirstParty, false);

      const config = await discover(t.url, clientId, clientSecret);
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid email', state: 's', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
      const browser = new Browser(t.url);
      await browser.signIn(USER.email, USER.password);
      const step = await follow(browser, url.pathname + url.search);
      assert.ok('page' in step && step.url.startsWith('/oidc/interaction/'), 'a consent page');
      const html = await step.page.text();
      const answer = await browser.post(`${step.url}/consent`, { csrfToken: hiddenValue(html, 'csrfToken'), decision: 'allow' });
      const back = await follow(browser, answer.headers.get('location')!);
      assert.ok('external' in back);
      const tokens = await client.authorizationCodeGrant(config, new URL(back.external), { pkceCodeVerifier: verifier, expectedState: 's' });
      assert.ok(tokens.access_token);
    });

    it('applies the registry rules: http outside loopback, implicit and client credentials for a public client are refused', async () => {
      const http = await register(t, { redirect_uris: ['http://rp.example/callback'] });
      assert.equal(http.status, 400);
      assert.match(String(http.json.error), /invalid_redirect_uri|invalid_client_metadata/);
      const publicMachine = await register(t, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['client_credentials'] });
      assert.equal(publicMachine.status, 400);
      const implicit = await register(t, { redirect_uris: [REDIRECT], response_types: ['id_token'], grant_types: ['implicit'] });
      assert.equal(implicit.status, 400);
    });

    it('limits registrations per IP', async () => {
      let last = 0;
      for (let attempt = 0; attempt < 8; attempt += 1) last = (await register(t, { redirect_uris: [REDIRECT] })).status;
      assert.equal(last, 429);
    });
  });
}
