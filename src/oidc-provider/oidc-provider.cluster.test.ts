/**
 * Several instances on one PostgreSQL behave as one provider: a code issued by one is redeemed at
 * another, refresh tokens rotate across them, and a grant revoked at one is dead at all; open
 * registration's cap and global rate hold for all of them together. The
 * instances share AUTH_URL (the issuer behind a load balancer) and AUTH_SECRET (the provider's
 * cookie keys derive from it); everything else they share through storage.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { Browser, createRpUser, discover, follow, freePort, registerClient, USER, type ListeningApp } from '../../test/helpers/oidc-rp.ts';

const REDIRECT = 'http://127.0.0.1:1/callback';
/** Open registration with a small cap and global rate, to see both shared by the instances. */
const OPEN_REGISTRATION = { OIDC_PROVIDER_REGISTRATION: 'open', OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS: '3', RATE_LIMIT_OIDC_REGISTRATION_GLOBAL: '4/1h' };
const postgres = (await backends()).find((backend) => backend.name === 'postgres')!;

describe('two instances on one PostgreSQL act as one OpenID Provider', { skip: postgres.skip }, () => {
  let database: TestDatabase;
  let a: ListeningApp;
  let b: TestApp & { url: string };

  before(async () => {
    database = await postgres.create();
    const [portA, portB] = [await freePort(), await freePort()];
    const issuer = `http://127.0.0.1:${portA}`;
    const env = { AUTH_URL: issuer, ...OPEN_REGISTRATION };
    const first = await createTestApp(database, { env });
    await first.app.listen({ port: portA, host: '127.0.0.1' });
    a = { ...first, url: issuer };
    // The second instance serves the same issuer (as behind a load balancer), on its own port.
    const second = await createTestApp(database, { env });
    await second.app.listen({ port: portB, host: '127.0.0.1' });
    b = { ...second, url: `http://127.0.0.1:${portB}` };
    await createRpUser(a);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  /** A token-endpoint request to instance B, as the load balancer would route it. */
  async function tokenAtB(clientId: string, clientSecret: string, fields: Record<string, string>): Promise<Record<string, unknown> & { status: number }> {
    const response = await fetch(`${b.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}` },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: response.status, ...((await response.json()) as Record<string, unknown>) };
  }

  it('redeems at B a code A issued, rotates the refresh token at B, and A sees the rotation', async () => {
    const { clientId, clientSecret } = await registerClient(a, { name: 'Balanced app', redirectUris: [REDIRECT], isFirstParty: true });
    const config = await discover(a.url, clientId, clientSecret);
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid offline_access',
      prompt: 'consent',
      state: 'st',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const browser = new Browser(a.url);
    await browser.signIn(USER.email, USER.password);
    const step = await follow(browser, url.pathname + url.search);
    assert.ok('external' in step);
    const code = new URL(step.external).searchParams.get('code')!;

    const issued = await tokenAtB(clientId, clientSecret!, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    assert.equal(issued.status, 200, JSON.stringify(issued));
    const refreshed = await tokenAtB(clientId, clientSecret!, { grant_type: 'refresh_token', refresh_token: String(issued.refresh_token) });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed));

    // At A: the first refresh token is spent (reuse revokes the grant), the new one then dead too.
    await assert.rejects(client.refreshTokenGrant(config, String(issued.refresh_token)), (error: client.ResponseBodyError) => error.error === 'invalid_grant');
    assert.equal((await client.tokenIntrospection(config, String(refreshed.refresh_token))).active, false);
    const again = await tokenAtB(clientId, clientSecret!, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    assert.equal(again.error, 'invalid_grant', 'a code works once across instances');
  });

  it('holds open registration\'s cap and global rate across instances (storage is their one counter)', async () => {
    const register = async (at: string) => {
      const response = await fetch(`${at}/oidc/reg`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
      return { status: response.status, error: ((await response.json()) as { error?: unknown }).error };
    };
    const answers = [];
    for (const at of [a.url, b.url, a.url, b.url, a.url]) answers.push(await register(at));
    assert.deepEqual(answers.map((answer) => answer.status), [201, 201, 201, 403, 429]);
    assert.equal(answers[3]!.error, 'access_denied', 'the cap of 3 counted the clients registered at both');
    assert.equal(answers[4]!.error, 'RATE_LIMITED', 'the global 4 counted the registrations at both');
  });
});
