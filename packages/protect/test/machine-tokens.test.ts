/**
 * Issue 32.2: an API protected by gatehouse-protect, for the tokens Gatehouse's OpenID Provider
 * issues for it (its resource URL as `audience`). A live Gatehouse on loopback issues them:
 * client credentials (a machine for itself) and the code flow (an app for a user, with and without
 * the `roles` scope), through openid-client. The API is the Web protector and the Node middleware
 * on a real node:http server. Scope rules pass and refuse (403 INSUFFICIENT_SCOPE with RFC 6750's
 * challenge), a token for another audience or a tampered one is 401 INVALID_TOKEN, and no machine
 * is ever told to sign in.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { backends, type TestDatabase } from '../../../test/helpers/databases.ts';
import { authorize, Browser, createRpUser, discover, listeningApp, registerClient, USER, type ListeningApp } from '../../../test/helpers/oidc-rp.ts';
import { createProtector, SEED_RULES, type ProtectionRules } from '../src/protect.ts';
import { toNodeMiddleware, type ProtectedRequest } from '../src/node.ts';

const API = 'http://127.0.0.1:1/api';
const OTHER_API = 'http://127.0.0.1:2/api';
const REDIRECT = 'http://127.0.0.1:1/callback';

/** The API's rules: the seed's, plus `read:items` under /api/items and `write:items` under /api/items/write. */
const RULES: ProtectionRules = {
  ...SEED_RULES,
  scopeRequirements: [
    { prefix: '/api/items', scopes: ['read:items'] },
    { prefix: '/api/items/write', scopes: ['write:items'] },
  ],
};

describe('gatehouse-protect and tokens Gatehouse issued to apps for an API', () => {
  let database: TestDatabase;
  let t: ListeningApp;
  let machineToken: string;
  let otherAudienceToken: string;
  let userToken: string;
  let userTokenWithRoles: string;
  let userId: string;
  let machineId: string;
  let appId: string;
  let server: Server;
  let apiUrl: string;

  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await listeningApp(database, { OIDC_PROVIDER_RESOURCES: `${API}=read:items write:items,${OTHER_API}=read:items` });
    userId = (await createRpUser(t, ['EDITOR'])).id;

    const machine = await registerClient(t, { name: 'Nightly job', grantTypes: ['client_credentials'] });
    machineId = machine.clientId;
    const machineConfig = await discover(t.url, machine.clientId, machine.clientSecret);
    machineToken = (await client.clientCredentialsGrant(machineConfig, { scope: 'read:items', resource: API })).access_token;
    otherAudienceToken = (await client.clientCredentialsGrant(machineConfig, { scope: 'read:items', resource: OTHER_API })).access_token;

    const app = await registerClient(t, { name: 'Dashboard app', redirectUris: [REDIRECT], isFirstParty: true });
    appId = app.clientId;
    const appConfig = await discover(t.url, app.clientId, app.clientSecret);
    for (const scope of ['openid read:items write:items', 'openid roles read:items']) {
      const flow = await authorize(new Browser(t.url), appConfig, { redirectUri: REDIRECT, scope, resource: API });
      const tokens = await client.authorizationCodeGrant(appConfig, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }, { resource: API });
      if (scope.includes('roles')) userTokenWithRoles = tokens.access_token;
      else userToken = tokens.access_token;
    }

    // The API, on node:http with the Node middleware: says who called.
    const middleware = toNodeMiddleware(createProtector({ issuer: t.url, audience: API, rules: RULES }));
    server = createServer((req: ProtectedRequest, res) => {
      middleware(req, res, (error) => {
        if (error !== undefined) {
          res.statusCode = 500;
          res.end();
          return;
        }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ user: req.gatehouse?.userId ?? null, client: req.gatehouseClient ?? null }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
    await database?.drop();
  });

  const call = (path: string, token?: string) => fetch(`${apiUrl}${path}`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

  it('describes a machine calling for itself as its client, with its scopes and no user', async () => {
    const response = await call('/api/items', machineToken);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { user: null, client: { clientId: machineId, scopes: ['read:items'], user: null, actors: [] } });

    const protector = createProtector({ issuer: t.url, audience: API, rules: RULES });
    const evaluation = await protector.evaluate(new Request(`${API}/items`, { headers: { authorization: `Bearer ${machineToken}` } }));
    assert.equal(evaluation.denial, null);
    assert.equal(evaluation.user, null, 'no user');
    assert.equal(evaluation.client?.clientId, machineId);
    assert.equal(await protector.authenticate(new Request(`${API}/items`, { headers: { authorization: `Bearer ${machineToken}` } })), null, 'authenticate is about users');
  });

  it('refuses a scope the token lacks with 403 INSUFFICIENT_SCOPE and the challenge naming what is needed', async () => {
    const response = await call('/api/items/write', machineToken);
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="read:items write:items"');
    assert.equal(((await response.json()) as { error: string }).error, 'INSUFFICIENT_SCOPE');
  });

  it('refuses a machine where a role is needed, and wherever no scope rule opts in to machines', async () => {
    const admin = await call('/api/admin/report', machineToken);
    assert.equal(admin.status, 403);
    assert.equal(((await admin.json()) as { error: string }).error, 'FORBIDDEN');
    const unscoped = await call('/api/other', machineToken);
    assert.equal(unscoped.status, 403, 'a path no scope rule covers is not for machines');
    assert.equal(((await unscoped.json()) as { error: string }).error, 'FORBIDDEN');
    assert.equal((await call('/api/other', userToken)).status, 200, 'an app calling for a user is, as before');
  });

  it('answers 401 INVALID_TOKEN for a token for another audience, a tampered one and a malformed header; UNAUTHENTICATED only without one', async () => {
    const [header, payload, signature] = machineToken.split('.');
    const tampered = `${header}.${payload}.${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
    for (const [what, token] of [['another audience', otherAudienceToken], ['a tampered signature', tampered]] as const) {
      const response = await call('/api/items', token);
      assert.equal(response.status, 401, what);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer error="invalid_token"', what);
      const body = (await response.json()) as { error: string; message: string };
      assert.equal(body.error, 'INVALID_TOKEN', what);
      assert.doesNotMatch(body.message, /sign in/i, `${what}: a machine is never told to sign in`);
    }
    // Another scheme presents no bearer token at all: the plain challenge, no error code (RFC 6750 §3.1).
    const basic = await fetch(`${apiUrl}/api/items`, { headers: { authorization: 'Basic bWFjaGluZTpzZWNyZXQ=' } });
    assert.equal(basic.status, 401);
    assert.equal(basic.headers.get('www-authenticate'), 'Bearer');
    assert.equal(((await basic.json()) as { error: string }).error, 'UNAUTHENTICATED');
    // A page path still sends the browser to sign in.
    const page = await fetch(`${apiUrl}/dashboard`, { headers: { authorization: `Bearer ${tampered}` }, redirect: 'manual' });
    assert.equal(page.status, 303);
    const none = await call('/api/items');
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');
    assert.equal(((await none.json()) as { error: string }).error, 'UNAUTHENTICATED');
  });

  it('describes an app calling for a user: the user, the app and its scopes; roles only when the app asked for them', async () => {
    const response = await call('/api/items/write', userToken);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { user: string; client: { clientId: string; scopes: string[]; user: { userId: string; sessionId: string | null; roles: string[] } } };
    assert.equal(body.user, userId);
    assert.equal(body.client.clientId, appId);
    assert.deepEqual(body.client.scopes, ['read:items', 'write:items']);
    assert.equal(body.client.user.userId, userId);
    assert.equal(body.client.user.sessionId, null, "an app's token belongs to no Gatehouse session");
    assert.deepEqual(body.client.user.roles, [], 'no roles scope, no roles');

    const withRoles = await call('/api/items', userTokenWithRoles);
    assert.equal(withRoles.status, 200);
    assert.deepEqual(((await withRoles.json()) as { client: { user: { roles: string[] } } }).client.user.roles, ['EDITOR']);
    assert.equal((await call('/api/items/write', userTokenWithRoles)).status, 403, 'write:items was not granted this time');
  });

  it("refuses Gatehouse's own session token where a scope is needed: it carries none", async () => {
    const signIn = await fetch(`${t.url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(USER) });
    const { token } = (await signIn.json()) as { token: string };
    const protector = createProtector({ issuer: t.url, rules: RULES });
    const request = (path: string) => new Request(`https://app.example${path}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await protector.check(request('/api/other'))), null, 'a session token passes where no scope is asked');
    const denied = await protector.check(request('/api/items'));
    assert.equal(denied?.status, 403);
    assert.equal(((await denied!.json()) as { error: string }).error, 'INSUFFICIENT_SCOPE');
  });

  it('accepts any audience of a list: tokens for the API and Gatehouse\'s own session tokens, and nothing else', async () => {
    const signIn = await fetch(`${t.url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(USER) });
    const { token: sessionToken } = (await signIn.json()) as { token: string };
    const protector = createProtector({ issuer: t.url, audience: [API, t.url], rules: RULES, cookieNames: [] });
    const request = (path: string, token: string) => new Request(`https://app.example${path}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await protector.evaluate(request('/api/items', machineToken))).client?.clientId, machineId);
    assert.equal((await protector.evaluate(request('/api/other', sessionToken))).user?.userId, userId);
    const other = await protector.check(request('/api/items', otherAudienceToken));
    assert.equal(other?.status, 401);
    assert.equal(((await other!.json()) as { error: string }).error, 'INVALID_TOKEN');
    // cookieNames: [] — a cookie is no credential for a Bearer-only API.
    const cookie = await protector.check(new Request('https://app.example/api/other', { headers: { cookie: `gatehouse.session=${sessionToken}` } }));
    assert.equal(cookie?.status, 401);
    assert.throws(() => createProtector({ issuer: t.url, audience: [] }), /audience is an empty list/);
  });
});
