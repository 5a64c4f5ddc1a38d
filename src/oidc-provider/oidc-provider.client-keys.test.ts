/**
 * Clients that prove themselves with their own keys, with openid-client over real HTTP on loopback,
 * on SQLite and PostgreSQL: `private_key_jwt` client authentication (RFC 7523) for a client that
 * registered the URL of its public keys (served here by a JWKS server on loopback, fetched under the
 * outbound rules), and request objects (JAR, RFC 9101) signed with those keys. Hostile: an
 * assertion signed by another key, an assertion used twice, a request object signed by another
 * key or not signed at all, a client with a secret sending a request object, inline keys at
 * registration.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { authorize, Browser, createRpUser, discover, follow, registerClient, useListeningApp } from '../../test/helpers/oidc-rp.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const REDIRECT = 'http://127.0.0.1:1/callback';
const REGISTRATION_TOKEN = 'registration-token-0123456789abcdefghijklmnop';

/** A client's key pair, its public half as a JWKS served on loopback. */
async function clientKeys() {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'key-1', use: 'sig' };
  let served = 0;
  const server: Server = createServer((_request, response) => {
    served += 1;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  return { privateKey, url, served: () => served, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

for (const backend of await backends()) {
  describe(`clients with their own keys (private_key_jwt, JAR) on ${backend.name}`, { skip: backend.skip }, () => {
    // The JWKS server is on loopback: private targets allowed, as an operator would for an internal client.
    const server = useListeningApp(backend, { OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true', OIDC_PROVIDER_REGISTRATION_TOKEN: REGISTRATION_TOKEN });
    let keys: Awaited<ReturnType<typeof clientKeys>>;
    let other: client.CryptoKey;
    let clientId: string;
    let keyed: client.Configuration;

    const tokenEndpoint = () => `${server.get().url}/oidc/token`;
    /** A client assertion as RFC 7523 describes it, signed with `key`. */
    const assertion = (key: client.CryptoKey, jti = crypto.randomUUID()) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'EdDSA', kid: 'key-1' })
        .setIssuer(clientId)
        .setSubject(clientId)
        .setAudience(server.get().url)
        .setJti(jti)
        .setIssuedAt()
        .setExpirationTime('1m')
        .sign(key);
    const clientCredentials = (clientAssertion: string) =>
      fetch(tokenEndpoint(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: clientAssertion }),
      });

    before(async () => {
      await server.setup();
      keys = await clientKeys();
      other = (await generateKeyPair('EdDSA', { crv: 'Ed25519' })).privateKey;
      await createRpUser(server.get());
      const registered = await registerClient(server.get(), { name: 'Keyed app', redirectUris: [REDIRECT], grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'], jwksUri: keys.url });
      assert.equal(registered.clientSecret, undefined, 'a client with keys gets no secret');
      clientId = registered.clientId;
      keyed = await client.discovery(new URL(server.get().url), clientId, undefined, client.PrivateKeyJwt(keys.privateKey), { execute: [client.allowInsecureRequests] });
    });
    after(async () => {
      await server.teardown();
      await keys?.close();
    });

    it('discovery says so: private_key_jwt and request objects, signed with asymmetric keys only', async () => {
      for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
        const metadata = (await (await fetch(`${server.get().url}${path}`)).json()) as Record<string, unknown>;
        assert.ok((metadata.token_endpoint_auth_methods_supported as string[]).includes('private_key_jwt'), path);
        assert.ok(!(metadata.token_endpoint_auth_methods_supported as string[]).includes('client_secret_jwt'), path);
        assert.deepEqual(metadata.token_endpoint_auth_signing_alg_values_supported, ['Ed25519', 'EdDSA', 'ES256', 'PS256', 'RS256'], path);
        assert.equal(metadata.request_parameter_supported, true, path);
        assert.ok(!(metadata.request_object_signing_alg_values_supported as string[]).some((alg) => alg === 'none' || alg.startsWith('HS')), path);
      }
    });

    it('a client signs in with a JWT it signed (client credentials), and the registry shows its keys, no secret', async () => {
      const tokens = await client.clientCredentialsGrant(keyed, {});
      assert.equal(tokens.token_type.toLowerCase(), 'bearer');
      const shown = await server.get().services.oidcClients.show(clientId);
      assert.equal(shown?.jwksUri, keys.url);
      assert.ok(keys.served() >= 1, 'the provider fetched the keys');
      const rotate = await server.get().services.oidcClients.rotateSecret(clientId, SYSTEM_SOURCE);
      assert.deepEqual(rotate, { ok: false, reason: 'KEY_CLIENT' });
    });

    it('refuses an assertion signed by another key, and one used a second time', async () => {
      const forged = await clientCredentials(await assertion(other));
      assert.equal(forged.status, 401);
      assert.equal(((await forged.json()) as { error: string }).error, 'invalid_client');
      const once = await assertion(keys.privateKey);
      assert.equal((await clientCredentials(once)).status, 200);
      const again = await clientCredentials(once);
      assert.equal(again.status, 401);
      assert.equal(((await again.json()) as { error: string }).error, 'invalid_client');
    });

    it('a request object signed with the client’s key carries the authorization request (JAR), through sign-in and consent to tokens', async () => {
      const flow = await authorize(new Browser(server.get().url), keyed, { redirectUri: REDIRECT, requestObjectKey: keys.privateKey });
      assert.equal(flow.consentPages, 1);
      const tokens = await client.authorizationCodeGrant(keyed, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
      assert.equal(decodeJwt(tokens.id_token!).aud, clientId);
    });

    /** Where an authorization request with this request object ends: the provider's error page (400) naming the error. */
    async function refusedRequestObject(requestObject: string, forClient = clientId): Promise<void> {
      const browser = new Browser(server.get().url);
      const step = await follow(browser, `/oidc/auth?${new URLSearchParams({ client_id: forClient, request: requestObject })}`);
      if ('external' in step) {
        assert.equal(new URL(step.external).searchParams.get('error'), 'invalid_request_object', step.external);
        return;
      }
      assert.equal(step.page.status, 400);
      const html = await step.page.text();
      assert.match(html, /INVALID_REQUEST_OBJECT/);
      assert.match(html, /not signed with the app’s own keys/);
    }
    const requestClaims = (forClient = clientId) => ({
      client_id: forClient,
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'state-1',
    });

    it('refuses a request object signed by another key, or not signed, or from a client that has only a secret', async () => {
      const signed = (key: client.CryptoKey, forClient = clientId) =>
        new SignJWT(requestClaims(forClient)).setProtectedHeader({ alg: 'EdDSA' }).setIssuer(forClient).setAudience(server.get().url).setIssuedAt().setExpirationTime('1m').sign(key);
      await refusedRequestObject(await signed(other));
      await refusedRequestObject(new UnsecuredJWT(requestClaims()).setIssuer(clientId).setAudience(server.get().url).setIssuedAt().setExpirationTime('1m').encode());
      const withSecret = await registerClient(server.get(), { name: 'Secret app', redirectUris: [REDIRECT] });
      await refusedRequestObject(await signed(other, withSecret.clientId), withSecret.clientId);
      // And the ordinary request of that client still works.
      const app = await discover(server.get().url, withSecret.clientId, withSecret.clientSecret);
      assert.ok((await authorize(new Browser(server.get().url), app, { redirectUri: REDIRECT })).callback.searchParams.has('code'));
    });

    it('dynamic registration takes private_key_jwt with a jwks_uri (no secret issued), and refuses keys by value', async () => {
      const register = (body: unknown) =>
        fetch(`${server.get().url}/oidc/reg`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${REGISTRATION_TOKEN}` }, body: JSON.stringify(body) });
      const response = await register({ client_name: 'Agent with keys', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: keys.url });
      const registered = (await response.json()) as Record<string, unknown>;
      assert.equal(response.status, 201, JSON.stringify(registered));
      assert.equal(registered.client_secret, undefined);
      assert.equal((await server.get().services.oidcClients.show(registered.client_id as string))?.jwksUri, keys.url);
      const inline = await register({ client_name: 'Inline keys', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } });
      assert.equal(inline.status, 400);
      assert.equal(((await inline.json()) as { error: string }).error, 'invalid_client_metadata');
      const noKeys = await register({ client_name: 'No keys', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' });
      assert.equal(noKeys.status, 400);
    });

    it('the registry refuses keys for a public client, and a jwks_uri that is not https (off loopback)', async () => {
      const publicWithKeys = await server.get().services.oidcClients.create({ name: 'SPA', redirectUris: [REDIRECT], isPublic: true, jwksUri: keys.url }, SYSTEM_SOURCE);
      assert.deepEqual(!publicWithKeys.ok && publicWithKeys.problems.map((problem) => problem.reason), ['KEYS_NOT_FOR_PUBLIC']);
      const plain = await server.get().services.oidcClients.create({ name: 'Plain', redirectUris: [REDIRECT], jwksUri: 'http://keys.example/jwks.json' }, SYSTEM_SOURCE);
      assert.deepEqual(!plain.ok && plain.problems.map((problem) => problem.reason), ['HTTPS_REQUIRED']);
    });
  });
}
