/**
 * Issue 33.5: DPoP (RFC 9449) end to end. A live Gatehouse issues tokens bound to the client's key
 * (`cnf.jkt`) when openid-client sends proofs (with Gatehouse's nonce, which it must fetch first);
 * an API guarded by gatehouse-protect takes such a token only with a fresh proof of that key for
 * the request: a stolen token sent as a Bearer token, a replayed proof, a proof for another URL,
 * method or token, by another key, or too old, are each refused. A refresh token of a public client
 * is bound too.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { base64url, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { backends, type TestDatabase } from '../../../test/helpers/databases.ts';
import { authorize, Browser, createRpUser, discover, listeningApp, registerClient, type ListeningApp } from '../../../test/helpers/oidc-rp.ts';
import { createProtector, type ProtectionRules } from '../src/protect.ts';
import { toNodeMiddleware, type ProtectedRequest } from '../src/node.ts';

const RULES: ProtectionRules = { protectedPrefixes: ['/api'], publicPrefixes: [], roleRequirements: [], scopeRequirements: [{ prefix: '/api/items', scopes: ['read:items'] }] };

describe('DPoP: tokens bound to a key, and gatehouse-protect taking them only with a proof of it', () => {
  let database: TestDatabase;
  let t: ListeningApp;
  let server: Server;
  let api: string;
  let config: client.Configuration;
  let keys: { privateKey: CryptoKey; publicKey: CryptoKey };
  let publicJwk: JWK;
  let bound: string;
  let unbound: string;
  let basic: string;

  /** A proof as RFC 9449 §4.2 makes it, each field overridable. */
  async function proof(token: string, claims: Record<string, unknown> = {}, signer = keys): Promise<string> {
    const ath = base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token))));
    return new SignJWT({ htm: 'GET', htu: `${api}/items`, jti: randomUUID(), ath, ...claims })
      .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: await exportJWK(signer.publicKey) })
      .setIssuedAt(typeof claims.iat === 'number' ? claims.iat : undefined)
      .sign(signer.privateKey);
  }
  const call = (token: string, dpop: string | null, init: { scheme?: string; method?: string; path?: string } = {}) =>
    fetch(`${api}${init.path ?? '/items'}`, { method: init.method ?? 'GET', headers: { authorization: `${init.scheme ?? 'DPoP'} ${token}`, ...(dpop !== null && { dpop }) } });

  before(async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await listeningApp(database, { OIDC_PROVIDER_RESOURCES: `${api}=read:items` });
    const middleware = toNodeMiddleware(createProtector({ issuer: t.url, audience: api, rules: RULES, cookieNames: [] }));
    server.on('request', (req: ProtectedRequest, res) => middleware(req, res, () => res.end(JSON.stringify({ client: req.gatehouseClient?.clientId ?? null }))));

    const machine = await registerClient(t, { name: 'Agent', grantTypes: ['client_credentials'] });
    config = await discover(t.url, machine.clientId, machine.clientSecret);
    basic = `Basic ${Buffer.from(`${machine.clientId}:${machine.clientSecret}`).toString('base64')}`;
    keys = await generateKeyPair('ES256', { extractable: true });
    publicJwk = await exportJWK(keys.publicKey);
    const handle = client.getDPoPHandle(config, keys);
    bound = (await client.clientCredentialsGrant(config, { scope: 'read:items', resource: api }, { DPoP: handle })).access_token;
    unbound = (await client.clientCredentialsGrant(config, { scope: 'read:items', resource: api })).access_token;
  });
  after(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
    await database?.drop();
  });

  it('binds the token to the key the client proved (with a nonce of Gatehouse first)', async () => {
    const claims = decodeJwt(bound);
    assert.deepEqual(claims.cnf, { jkt: await calculateJwkThumbprint(publicJwk, 'sha256') });
    assert.equal(decodeJwt(unbound).cnf, undefined);
    // Without a nonce Gatehouse answers use_dpop_nonce with one; openid-client retried with it above.
    const response = await fetch(`${t.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic, dpop: await new SignJWT({ htm: 'POST', htu: `${t.url}/oidc/token`, jti: randomUUID() }).setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: publicJwk }).setIssuedAt().sign(keys.privateKey) },
      body: `grant_type=client_credentials&scope=read%3Aitems&resource=${encodeURIComponent(api)}`,
    });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: string }).error, 'use_dpop_nonce');
    assert.ok(response.headers.get('dpop-nonce'));
  });

  it('takes the bound token with a proof, through openid-client as a client would call', async () => {
    const response = await client.fetchProtectedResource(config, bound, new URL(`${api}/items?page=2`), 'GET', undefined, undefined, { DPoP: client.getDPoPHandle(config, keys) });
    assert.equal(response.status, 200);
  });

  it('refuses the bound token as a Bearer token, without a proof, and an unbound token under the DPoP scheme', async () => {
    for (const [what, response] of [
      ['as Bearer', await call(bound, null, { scheme: 'Bearer' })],
      ['as Bearer with a proof', await call(bound, await proof(bound), { scheme: 'Bearer' })],
      ['without a proof', await call(bound, null)],
      ['unbound, as DPoP', await call(unbound, await proof(unbound))],
    ] as const) {
      assert.equal(response.status, 401, what);
      assert.equal(((await response.json()) as { error: string }).error, 'INVALID_TOKEN', what);
    }
    const challenge = (await call(bound, null)).headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^DPoP algs="[^"]*ES256[^"]*", error="invalid_token"$/);
    assert.equal((await call(unbound, null, { scheme: 'Bearer' })).status, 200, 'an unbound token stays a Bearer token');
  });

  it('accepts each proof once, and only for its method, URL, token and key, made just now', async () => {
    const once = await proof(bound);
    assert.equal((await call(bound, once)).status, 200);
    assert.equal((await call(bound, once)).status, 401, 'a replayed proof');

    const other = await generateKeyPair('ES256', { extractable: true });
    const refused: Array<[string, string, { method?: string; path?: string }?]> = [
      ['another URL', await proof(bound, { htu: `${api}/other` })],
      ['another origin', await proof(bound, { htu: `http://evil.example/api/items` })],
      ['another method', await proof(bound, { htm: 'POST' })],
      ['the proof names GET, the request is DELETE', await proof(bound), { method: 'DELETE' }],
      ['another token', await proof(unbound)],
      ['another key', await proof(bound, {}, other)],
      ['too old', await proof(bound, { iat: Math.floor(Date.now() / 1000) - 600 })],
      ['from the future', await proof(bound, { iat: Math.floor(Date.now() / 1000) + 600 })],
      ['no jti', await proof(bound, { jti: undefined })],
      ['not a JWT', 'garbage'],
    ];
    for (const [what, dpop, init] of refused) assert.equal((await call(bound, dpop, init)).status, 401, what);
    // A proof signed with an HMAC key (no public key to embed) is no proof.
    const symmetric = await new SignJWT({ htm: 'GET', htu: `${api}/items`, jti: randomUUID() }).setProtectedHeader({ typ: 'dpop+jwt', alg: 'HS256' }).setIssuedAt().sign(new TextEncoder().encode('a'.repeat(32)));
    assert.equal((await call(bound, symmetric)).status, 401);
    assert.equal((await call(bound, await proof(bound))).status, 200, 'a fresh, right proof still works');
  });

  it('binds the refresh token of a public client to its key: refreshing needs a proof of it', async () => {
    await createRpUser(t);
    const redirect = 'http://127.0.0.1:1/callback';
    const app = await registerClient(t, { name: 'Public agent', redirectUris: [redirect], isPublic: true, grantTypes: ['authorization_code', 'refresh_token'], isFirstParty: true });
    const publicConfig = await discover(t.url, app.clientId);
    const handle = client.getDPoPHandle(publicConfig, keys);
    const flow = await authorize(new Browser(t.url), publicConfig, { redirectUri: redirect, scope: 'openid offline_access' });
    const tokens = await client.authorizationCodeGrant(publicConfig, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }, undefined, { DPoP: handle });
    assert.equal(tokens.token_type?.toLowerCase(), 'dpop');
    assert.ok(tokens.refresh_token);
    await assert.rejects(client.refreshTokenGrant(publicConfig, tokens.refresh_token), (error: { error?: string }) => error.error === 'invalid_grant', 'without the proof');
    await assert.rejects(client.refreshTokenGrant(publicConfig, tokens.refresh_token, undefined, { DPoP: client.getDPoPHandle(publicConfig, await generateKeyPair('ES256', { extractable: true })) }), (error: { error?: string }) => error.error === 'invalid_grant', 'with another key');
    const refreshed = await client.refreshTokenGrant(publicConfig, tokens.refresh_token, undefined, { DPoP: handle });
    assert.equal(refreshed.token_type?.toLowerCase(), 'dpop');
  });

  it('requires DPoP of a client registered with dpopBoundAccessTokens: no proof, no token', async () => {
    const strict = await registerClient(t, { name: 'Strict agent', grantTypes: ['client_credentials'], dpopBoundAccessTokens: true });
    assert.equal((await t.services.oidcClients.show(strict.clientId))?.dpopBoundAccessTokens, true);
    const strictConfig = await discover(t.url, strict.clientId, strict.clientSecret);
    await assert.rejects(client.clientCredentialsGrant(strictConfig, { scope: 'read:items', resource: api }), (error: { cause?: { error?: string } }) => error.cause?.error === 'invalid_grant', 'without a proof: the grant is refused');
    const token = (await client.clientCredentialsGrant(strictConfig, { scope: 'read:items', resource: api }, { DPoP: client.getDPoPHandle(strictConfig, keys) })).access_token;
    assert.deepEqual(decodeJwt(token).cnf, { jkt: await calculateJwkThumbprint(publicJwk, 'sha256') });
    // Dynamic registration carries the flag too (a client asking for DPoP-bound tokens, RFC 9449 §5.2).
    const metadata = await t.services.oidcClients.providerMetadata(strict.clientId);
    assert.equal(metadata?.dpop_bound_access_tokens, true);
  });
});
