import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as client from 'openid-client';
import { startGitHubPeer, startOidcPeer, type GitHubPeer, type OidcPeer } from './oauth-peers.ts';

// Never fetched: the tests read the authorize redirect's Location instead of following it.
const REDIRECT_URI = 'http://127.0.0.1:9/oauth/callback';

interface SignInStart {
  callback: URL;
  pkceCodeVerifier: string;
  state: string;
  nonce: string;
}

async function beginSignIn(config: client.Configuration, parameters: Record<string, string> = {}): Promise<SignInStart> {
  const pkceCodeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    state,
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: 'S256',
    ...parameters,
  });
  if (parameters['nonce'] === undefined && parameters['scope']?.includes('openid')) url.searchParams.set('nonce', nonce);
  const response = await fetch(url, { redirect: 'manual' });
  assert.equal(response.status, 302);
  const location = response.headers.get('location');
  assert.ok(location !== null);
  return { callback: new URL(location), pkceCodeVerifier, state, nonce };
}

async function postForm(url: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

describe('startOidcPeer', () => {
  let peer: OidcPeer;
  let config: client.Configuration;
  const OIDC_SCOPE = 'openid email profile';

  before(async () => {
    peer = await startOidcPeer();
    config = await client.discovery(new URL(peer.issuer), peer.clientId, peer.clientSecret, undefined, {
      execute: [client.allowInsecureRequests],
    });
  });
  after(() => peer.close());

  function codeGrant(start: SignInStart, overrides: client.AuthorizationCodeGrantChecks = {}, using = config) {
    return client.authorizationCodeGrant(using, start.callback, {
      pkceCodeVerifier: start.pkceCodeVerifier,
      expectedState: start.state,
      expectedNonce: start.nonce,
      idTokenExpected: true,
      ...overrides,
    });
  }

  it('signs in end to end with openid-client and serves the same claims at userinfo', async () => {
    assert.equal(config.serverMetadata().issuer, peer.issuer);
    assert.match(peer.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    peer.signInAs({ sub: 'google-42', email: 'grace@example.com', email_verified: true, name: 'Grace Hopper' });
    const start = await beginSignIn(config, { scope: OIDC_SCOPE });
    assert.equal(start.callback.searchParams.get('state'), start.state);

    const tokens = await codeGrant(start);
    const claims = tokens.claims();
    assert.ok(claims !== undefined);
    assert.equal(claims.iss, peer.issuer);
    assert.equal(claims.aud, peer.clientId);
    assert.equal(claims.nonce, start.nonce);
    assert.equal(typeof claims.iat, 'number');
    assert.ok(claims.exp > claims.iat);
    assert.deepEqual(
      { sub: claims.sub, email: claims['email'], email_verified: claims['email_verified'], name: claims['name'] },
      { sub: 'google-42', email: 'grace@example.com', email_verified: true, name: 'Grace Hopper' },
    );

    const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    assert.deepEqual(userinfo, { sub: 'google-42', email: 'grace@example.com', email_verified: true, name: 'Grace Hopper' });

    const seen = peer.authorizeRequests.at(-1);
    assert.equal(seen?.get('client_id'), peer.clientId);
    assert.equal(seen?.get('code_challenge_method'), 'S256');
    assert.equal(seen?.get('nonce'), start.nonce);
  });

  it('gives email and name only for the email and profile scopes', async () => {
    peer.signInAs({ sub: 'scoped', email: 'scoped@example.com', email_verified: false, name: 'Scoped' });
    const start = await beginSignIn(config, { scope: 'openid' });
    const claims = (await codeGrant(start)).claims();
    assert.equal(claims?.sub, 'scoped');
    assert.equal(claims?.['email'], undefined);
    assert.equal(claims?.['name'], undefined);
  });

  it('checks the client secret by client_secret_basic and client_secret_post', async () => {
    const basicConfig = new client.Configuration(config.serverMetadata(), peer.clientId, peer.clientSecret, client.ClientSecretBasic());
    client.allowInsecureRequests(basicConfig);
    const tokens = await codeGrant(await beginSignIn(basicConfig, { scope: OIDC_SCOPE }), {}, basicConfig);
    assert.equal(typeof tokens.access_token, 'string');

    // The package's own lax /token must stay unreachable, trailing slash included.
    const bypass = await postForm(`${peer.issuer}/token/`, { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT_URI });
    assert.deepEqual({ status: bypass.status, error: bypass.body['error'] }, { status: 401, error: 'invalid_client' });

    for (const auth of [client.ClientSecretBasic('wrong'), client.ClientSecretPost('wrong')]) {
      const wrong = new client.Configuration(config.serverMetadata(), peer.clientId, 'wrong', auth);
      client.allowInsecureRequests(wrong);
      await assert.rejects(codeGrant(await beginSignIn(wrong, { scope: OIDC_SCOPE }), {}, wrong), (error: unknown) => {
        assert.ok(error instanceof client.ResponseBodyError);
        assert.deepEqual({ code: error.code, status: error.status, error: error.error }, { code: 'OAUTH_RESPONSE_BODY_ERROR', status: 401, error: 'invalid_client' });
        return true;
      });
    }
  });

  it('refuses a wrong or missing code_verifier with invalid_grant', async () => {
    const wrong = await beginSignIn(config, { scope: OIDC_SCOPE });
    await assert.rejects(codeGrant(wrong, { pkceCodeVerifier: client.randomPKCECodeVerifier() }), (error: unknown) => {
      assert.ok(error instanceof client.ResponseBodyError);
      assert.deepEqual({ status: error.status, error: error.error }, { status: 400, error: 'invalid_grant' });
      return true;
    });

    const missing = await beginSignIn(config, { scope: OIDC_SCOPE });
    const { status, body } = await postForm(`${peer.issuer}/token`, {
      grant_type: 'authorization_code',
      code: missing.callback.searchParams.get('code') ?? '',
      redirect_uri: REDIRECT_URI,
    }, { authorization: basic(peer.clientId, peer.clientSecret) });
    assert.deepEqual({ status, error: body['error'] }, { status: 400, error: 'invalid_grant' });
  });

  it('refuses a code used twice and revokes what the first use bought', async () => {
    const start = await beginSignIn(config, { scope: OIDC_SCOPE });
    const tokens = await codeGrant(start);
    await assert.rejects(codeGrant(start), { name: 'ResponseBodyError', error: 'invalid_grant', status: 400 });
    await assert.rejects(client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck), (error: unknown) => {
      assert.ok(error instanceof client.WWWAuthenticateChallengeError);
      assert.deepEqual({ code: error.code, status: error.status, challenge: error.cause[0]?.parameters.error }, {
        code: 'OAUTH_WWW_AUTHENTICATE_CHALLENGE', status: 401, challenge: 'invalid_token',
      });
      return true;
    });
  });

  it('refuses a code redeemed with another redirect_uri', async () => {
    const start = await beginSignIn(config, { scope: OIDC_SCOPE });
    const { status, body } = await postForm(`${peer.issuer}/token`, {
      grant_type: 'authorization_code',
      code: start.callback.searchParams.get('code') ?? '',
      redirect_uri: 'http://127.0.0.1:9/elsewhere',
      code_verifier: start.pkceCodeVerifier,
      client_id: peer.clientId,
      client_secret: peer.clientSecret,
    });
    assert.deepEqual({ status, error: body['error'] }, { status: 400, error: 'invalid_grant' });
  });

  it('makes authorizationCodeGrant throw on a tampered ID token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['aud', { aud: 'someone-else' }, 'OAUTH_JWT_CLAIM_COMPARISON_FAILED'],
      ['iss', { iss: 'https://accounts.example.com' }, 'OAUTH_JWT_CLAIM_COMPARISON_FAILED'],
      ['nonce', { nonce: 'replayed-nonce' }, 'OAUTH_JWT_CLAIM_COMPARISON_FAILED'],
      ['no nonce', { nonce: undefined }, 'OAUTH_INVALID_RESPONSE'],
      ['no sub', { sub: undefined }, 'OAUTH_INVALID_RESPONSE'],
      // openid-client allows 30 s of clock tolerance by default.
      ['exp', { exp: now - 120 }, 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED'],
    ];
    for (const [label, claims, code] of cases) {
      peer.tamperNextIdToken({ claims });
      const start = await beginSignIn(config, { scope: OIDC_SCOPE });
      await assert.rejects(codeGrant(start), (error: unknown) => {
        assert.ok(error instanceof client.ClientError, label);
        assert.equal(error.code, code, label);
        return true;
      });
    }
  });

  it('catches a foreign-key signature only with enableNonRepudiationChecks', async () => {
    peer.tamperNextIdToken({ foreignKey: true });
    // By default openid-client trusts the TLS channel to the token endpoint and skips the signature.
    const unchecked = await codeGrant(await beginSignIn(config, { scope: OIDC_SCOPE }));
    assert.equal(typeof unchecked.id_token, 'string');

    const strict = new client.Configuration(config.serverMetadata(), peer.clientId, peer.clientSecret);
    client.allowInsecureRequests(strict);
    client.enableNonRepudiationChecks(strict);
    const genuine = await codeGrant(await beginSignIn(strict, { scope: OIDC_SCOPE }), {}, strict);
    assert.equal(typeof genuine.id_token, 'string');

    peer.tamperNextIdToken({ foreignKey: true });
    await assert.rejects(codeGrant(await beginSignIn(strict, { scope: OIDC_SCOPE }), {}, strict), (error: unknown) => {
      assert.ok(error instanceof client.ClientError);
      assert.equal(error.code, 'OAUTH_INVALID_RESPONSE');
      return true;
    });
  });

  it('answers access_denied after denyNext, then signs in again', async () => {
    peer.denyNext();
    const denied = await beginSignIn(config, { scope: OIDC_SCOPE });
    assert.equal(denied.callback.searchParams.get('error'), 'access_denied');
    assert.equal(denied.callback.searchParams.get('state'), denied.state);
    assert.equal(denied.callback.searchParams.get('code'), null);
    await assert.rejects(codeGrant(denied), (error: unknown) => {
      assert.ok(error instanceof client.AuthorizationResponseError);
      assert.deepEqual({ code: error.code, error: error.error }, { code: 'OAUTH_AUTHORIZATION_RESPONSE_ERROR', error: 'access_denied' });
      return true;
    });
    assert.equal(typeof (await codeGrant(await beginSignIn(config, { scope: OIDC_SCOPE }))).access_token, 'string');
  });

  it('shows how openid-client checks state and the iss response parameter', async () => {
    const start = await beginSignIn(config, { scope: OIDC_SCOPE });
    await assert.rejects(codeGrant(start, { expectedState: 'another-state' }), { name: 'ClientError', code: 'OAUTH_INVALID_RESPONSE' });

    const wrongIss = new URL(start.callback);
    wrongIss.searchParams.set('iss', 'https://accounts.example.com');
    await assert.rejects(codeGrant({ ...start, callback: wrongIss }), { name: 'ClientError', code: 'OAUTH_INVALID_RESPONSE' });

    const { supportsPKCE: _helper, ...metadata } = config.serverMetadata();
    const requiresIss = new client.Configuration({ ...metadata, authorization_response_iss_parameter_supported: true }, peer.clientId, peer.clientSecret);
    client.allowInsecureRequests(requiresIss);
    await assert.rejects(codeGrant(start, {}, requiresIss), { name: 'ClientError', code: 'OAUTH_INVALID_RESPONSE' });

    // None of the failures above reached the token endpoint, so the code is still good, with a matching iss.
    const rightIss = new URL(start.callback);
    rightIss.searchParams.set('iss', peer.issuer);
    assert.equal(typeof (await codeGrant({ ...start, callback: rightIss }, {}, requiresIss)).access_token, 'string');
  });

  it('refuses plain PKCE and an unknown client at the authorize endpoint', async () => {
    const plain = new URL(`${peer.issuer}/authorize`);
    plain.search = new URLSearchParams({ client_id: peer.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: 'openid', state: 's1', code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }).toString();
    const location = new URL((await fetch(plain, { redirect: 'manual' })).headers.get('location') ?? '');
    assert.deepEqual([location.searchParams.get('error'), location.searchParams.get('state')], ['invalid_request', 's1']);

    plain.searchParams.set('client_id', 'stranger');
    const stranger = await fetch(plain, { redirect: 'manual' });
    assert.equal(stranger.status, 400);
    await stranger.body?.cancel();
  });
});

describe('startGitHubPeer', () => {
  let peer: GitHubPeer;
  let config: client.Configuration;
  const GITHUB_SCOPE = 'read:user user:email';

  before(async () => {
    peer = await startGitHubPeer();
    config = new client.Configuration({
      issuer: peer.url,
      authorization_endpoint: `${peer.url}/login/oauth/authorize`,
      token_endpoint: `${peer.url}/login/oauth/access_token`,
    }, peer.clientId, peer.clientSecret);
    client.allowInsecureRequests(config);
  });
  after(() => peer.close());

  function codeGrant(start: SignInStart, using = config) {
    return client.authorizationCodeGrant(using, start.callback, { pkceCodeVerifier: start.pkceCodeVerifier, expectedState: start.state });
  }

  async function getApi(path: string, token: string, scheme = 'Bearer'): Promise<{ status: number; body: unknown; scopes: string | null }> {
    const response = await fetch(`${peer.url}${path}`, { headers: { authorization: `${scheme} ${token}`, accept: 'application/vnd.github+json' } });
    return { status: response.status, body: await response.json(), scopes: response.headers.get('x-oauth-scopes') };
  }

  async function tokenErrorOf(promise: Promise<unknown>): Promise<unknown> {
    const error = await promise.then(() => assert.fail('expected the grant to fail'), (reason: unknown) => reason);
    // GitHub's HTTP 200 error body has no access_token, so openid-client sees a malformed success.
    assert.ok(error instanceof client.ClientError);
    assert.equal(error.code, 'OAUTH_INVALID_RESPONSE');
    const cause = error.cause as { cause?: { body?: { error?: unknown } } };
    return cause.cause?.body?.error;
  }

  it('signs in end to end with openid-client and serves /user and /user/emails', async () => {
    peer.signInAs({
      id: 9001,
      login: 'grace',
      name: 'Grace Hopper',
      emails: [
        { email: 'grace@example.com', primary: true, verified: true },
        { email: 'grace@old.example.com', primary: false, verified: false },
      ],
    });
    const start = await beginSignIn(config, { scope: GITHUB_SCOPE });
    assert.equal(start.callback.searchParams.get('state'), start.state);
    const seen = peer.authorizeRequests.at(-1);
    assert.deepEqual([seen?.get('client_id'), seen?.get('scope'), seen?.get('code_challenge_method')], [peer.clientId, GITHUB_SCOPE, 'S256']);

    const tokens = await codeGrant(start);
    assert.equal(tokens.token_type, 'bearer');
    assert.equal(tokens.scope, 'read:user,user:email');
    assert.equal(tokens.claims(), undefined);

    const user = await getApi('/user', tokens.access_token);
    assert.equal(user.status, 200);
    assert.equal(user.scopes, 'read:user, user:email');
    assert.deepEqual(
      (({ id, login, name, email }) => ({ id, login, name, email }))(user.body as Record<string, unknown>),
      { id: 9001, login: 'grace', name: 'Grace Hopper', email: 'grace@example.com' },
    );
    const emails = await getApi('/user/emails', tokens.access_token, 'token');
    assert.deepEqual(emails, {
      status: 200,
      scopes: 'read:user, user:email',
      body: [
        { email: 'grace@example.com', primary: true, verified: true, visibility: 'public' },
        { email: 'grace@old.example.com', primary: false, verified: false, visibility: null },
      ],
    });
  });

  it('answers token errors with HTTP 200 the way GitHub does', async () => {
    const pkce = await beginSignIn(config, { scope: GITHUB_SCOPE });
    assert.equal(await tokenErrorOf(codeGrant({ ...pkce, pkceCodeVerifier: client.randomPKCECodeVerifier() })), 'bad_verification_code');

    const reused = await beginSignIn(config, { scope: GITHUB_SCOPE });
    await codeGrant(reused);
    assert.equal(await tokenErrorOf(codeGrant(reused)), 'bad_verification_code');

    const wrongSecret = new client.Configuration(config.serverMetadata(), peer.clientId, 'wrong', client.ClientSecretBasic());
    client.allowInsecureRequests(wrongSecret);
    assert.equal(await tokenErrorOf(codeGrant(await beginSignIn(wrongSecret, { scope: GITHUB_SCOPE }), wrongSecret)), 'incorrect_client_credentials');

    const basicConfig = new client.Configuration(config.serverMetadata(), peer.clientId, peer.clientSecret, client.ClientSecretBasic());
    client.allowInsecureRequests(basicConfig);
    assert.equal(typeof (await codeGrant(await beginSignIn(basicConfig, { scope: GITHUB_SCOPE }), basicConfig)).access_token, 'string');

    const tokenUrl = `${peer.url}/login/oauth/access_token`;
    const missing = await beginSignIn(config, { scope: GITHUB_SCOPE });
    const code = missing.callback.searchParams.get('code') ?? '';
    const credentials = { client_id: peer.clientId, client_secret: peer.clientSecret };
    assert.deepEqual(
      (await postForm(tokenUrl, { ...credentials, code, redirect_uri: REDIRECT_URI })).body['error'],
      'bad_verification_code',
    );
    const moved = await beginSignIn(config, { scope: GITHUB_SCOPE });
    const mismatch = await postForm(tokenUrl, {
      ...credentials,
      code: moved.callback.searchParams.get('code') ?? '',
      redirect_uri: 'http://127.0.0.1:9/elsewhere',
      code_verifier: moved.pkceCodeVerifier,
    });
    assert.deepEqual({ status: mismatch.status, error: mismatch.body['error'] }, { status: 200, error: 'redirect_uri_mismatch' });
  });

  it('answers in form encoding without Accept: application/json', async () => {
    const start = await beginSignIn(config, { scope: '' });
    const response = await fetch(`${peer.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(peer.clientId, peer.clientSecret) },
      body: new URLSearchParams({ code: start.callback.searchParams.get('code') ?? '', redirect_uri: REDIRECT_URI, code_verifier: start.pkceCodeVerifier }),
    });
    const body = new URLSearchParams(await response.text());
    assert.deepEqual([body.get('token_type'), body.get('scope'), body.get('access_token')?.startsWith('gho_')], ['bearer', '', true]);
  });

  it('answers access_denied after denyNext', async () => {
    peer.denyNext();
    const denied = await beginSignIn(config, { scope: GITHUB_SCOPE });
    assert.deepEqual(
      [denied.callback.searchParams.get('error'), denied.callback.searchParams.get('state'), denied.callback.searchParams.has('error_description')],
      ['access_denied', denied.state, true],
    );
    await assert.rejects(codeGrant(denied), { name: 'AuthorizationResponseError', error: 'access_denied' });
  });

  it('plays API failures, bad tokens, missing scopes, private emails and unknown paths', async () => {
    peer.signInAs({ id: 7, login: 'shy', name: null, emails: [{ email: 'shy@example.com', primary: true, verified: true, visibility: 'private' }] });
    const readOnly = await codeGrant(await beginSignIn(config, { scope: 'read:user' }));
    assert.deepEqual((await getApi('/user', readOnly.access_token)).body, {
      login: 'shy', id: 7, node_id: Buffer.from('04:User7').toString('base64'), avatar_url: 'https://avatars.githubusercontent.com/u/7?v=4',
      html_url: 'https://github.com/shy', type: 'User', name: null, email: null,
    });
    assert.equal((await getApi('/user/emails', readOnly.access_token)).status, 404);

    assert.deepEqual(await getApi('/user', 'gho_not-a-token'), {
      status: 401, scopes: null, body: { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' },
    });

    peer.failApi(true);
    assert.equal((await getApi('/user', readOnly.access_token)).status, 500);
    assert.equal((await getApi('/user/emails', readOnly.access_token)).status, 500);
    peer.failApi(false);
    assert.equal((await getApi('/user', readOnly.access_token)).status, 200);

    const unknown = await fetch(`${peer.url}/.well-known/openid-configuration`);
    assert.equal(unknown.status, 404);
    await unknown.body?.cancel();
  });
});
