/**
 * Issue 33.1: client ID metadata documents. A client whose `client_id` is an https URL, with no
 * registration at Gatehouse: Gatehouse fetches the document from that URL (here an https server on
 * loopback with a test certificate authority, OIDC_PROVIDER_CIMD_CA_FILE, and loopback allowed by
 * OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS), signs the person in, asks their consent naming the client's
 * host, and issues tokens through openid-client as any public client gets them. Hostile: a
 * document whose client_id differs, a redirect, an oversize or slow document, a secret-based
 * client, redirect URIs the registry refuses, a denied host; and, without the setting, a document
 * on a loopback address is never fetched.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { exportJWK, generateKeyPair } from 'jose';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { REPO_ROOT } from '../../test/helpers/process.ts';
import { authorize, Browser, createRpUser, discover, listeningApp, type ListeningApp } from '../../test/helpers/oidc-rp.ts';
import { createDocumentFetch } from '../http/outbound/fetcher.ts';
import { documentClientName } from './cimd.ts';

const CERT = join(REPO_ROOT, 'test/fixtures/https-localhost.crt');
const KEY = join(REPO_ROOT, 'test/fixtures/https-localhost.key');
const REDIRECT = 'http://127.0.0.1:33418/callback';

interface Served {
  status?: number;
  body: string;
  headers?: Record<string, string>;
  /** Answer only after this long (a slow host). */
  delayMs?: number;
}

describe('client ID metadata documents: an https client_id is a client', () => {
  let database: TestDatabase;
  let t: ListeningApp;
  let documents: Server;
  let origin: string;
  const served = new Map<string, Served>();
  const fetched: string[] = [];

  /** A document for `path` on the loopback https server; its client_id is its URL unless given. */
  function serve(path: string, metadata: Record<string, unknown> = {}, extra: Omit<Served, 'body'> = {}): string {
    const url = `${origin}${path}`;
    const document = { client_id: url, client_name: 'Example Agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...metadata };
    served.set(path, { body: JSON.stringify(document), headers: { 'content-type': 'application/json', 'cache-control': 'max-age=600' }, ...extra });
    return url;
  }

  before(async () => {
    documents = createServer({ cert: readFileSync(CERT), key: readFileSync(KEY) }, (req, res) => {
      fetched.push(req.url ?? '');
      const answer = served.get(req.url ?? '');
      const send = () => {
        if (answer === undefined) {
          res.statusCode = 404;
          res.end();
          return;
        }
        res.writeHead(answer.status ?? 200, answer.headers ?? {});
        res.end(answer.body);
      };
      if (answer?.delayMs === undefined) send();
      else setTimeout(send, answer.delayMs).unref();
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    origin = `https://localhost:${(documents.address() as AddressInfo).port}`;
    database = await createSqliteDatabase();
    t = await listeningApp(database, {
      OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true',
      OIDC_PROVIDER_CIMD_CA_FILE: CERT,
      OIDC_PROVIDER_CIMD_DENY_HOSTS: '127.0.0.1',
    });
    await createRpUser(t);
  });
  after(async () => {
    documents?.closeAllConnections();
    await new Promise((resolve) => documents?.close(resolve));
    await t?.close();
    await database?.drop();
  });

  /** The authorization request's first answer for a client id: a redirect onward, or the provider's error. */
  async function start(clientId: string): Promise<{ status: number; location: string | null; body: string }> {
    const url = new URL('/oidc/auth', t.url);
    for (const [name, value] of Object.entries({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })) {
      url.searchParams.set(name, value);
    }
    const response = await fetch(url, { redirect: 'manual' });
    return { status: response.status, location: response.headers.get('location'), body: await response.text() };
  }

  it('advertises the support in its metadata', async () => {
    const metadata = (await (await fetch(`${t.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(metadata.client_id_metadata_document_supported, true);
  });

  it('signs a person in for a client known only by its document, with consent naming its host, and issues its tokens', async () => {
    const clientId = serve('/agents/example.json');
    const config = await discover(t.url, clientId);
    let consentHtml = '';
    const flow = await authorize(new Browser(t.url), config, { redirectUri: REDIRECT, scope: 'openid email offline_access', onConsentPage: (html) => (consentHtml = html) });
    assert.equal(flow.consentPages, 1, 'never first-party: the person is asked');
    assert.match(consentHtml, /Example Agent/);
    assert.match(consentHtml, new RegExp(`known only by its address, <strong>localhost:${new URL(origin).port}</strong>`));
    const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
    assert.equal(tokens.claims()?.aud, clientId);
    assert.ok(tokens.refresh_token);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
    assert.ok(refreshed.access_token);
    // Cached by its headers: one fetch for all of the above.
    assert.equal(fetched.filter((path) => path === '/agents/example.json').length, 1);
    // The person sees it among their connected apps, by its host, and can disconnect it.
    const apps = await t.services.oidcProvider.connectedApps((await t.services.users.findUserByEmail('ada@example.com'))!.id);
    const host = `localhost:${new URL(origin).port}`;
    assert.deepEqual(apps.map((app) => [app.clientId, app.name, app.host, app.reviewed]), [[clientId, host, host, false]]);
    assert.ok(apps[0]!.lastUsedAt !== null, 'its last use by this person is known');
  });

  it('a document client may prove itself with its keys (private_key_jwt, jwks_uri beside its document), still with PKCE', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    served.set('/agents/keys.json', { body: JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'agent-1' }] }), headers: { 'content-type': 'application/json' } });
    const clientId = serve('/agents/keyed.json', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: `${origin}/agents/keys.json` });
    const config = await client.discovery(new URL(t.url), clientId, undefined, client.PrivateKeyJwt({ key: privateKey, kid: 'agent-1' }), { execute: [client.allowInsecureRequests] });
    const flow = await authorize(new Browser(t.url), config, { redirectUri: REDIRECT });
    const tokens = await client.authorizationCodeGrant(config, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce });
    assert.equal(tokens.claims()?.aud, clientId);
    // Without its assertion the client is nobody; without PKCE the request is refused.
    const bare = await discover(t.url, clientId);
    const again = await authorize(new Browser(t.url), config, { redirectUri: REDIRECT });
    await assert.rejects(client.authorizationCodeGrant(bare, again.callback, { pkceCodeVerifier: again.codeVerifier, expectedState: again.state, expectedNonce: again.nonce }), (error: { error?: string }) => error.error === 'invalid_client');
    const noPkce = await authorize(new Browser(t.url), config, { redirectUri: REDIRECT, pkce: false });
    assert.equal(noPkce.callback.searchParams.get('error'), 'invalid_request');
  });

  it('shows a document’s client name without the characters that could disguise it', async () => {
    assert.equal(documentClientName('Invoice\u202Egpj.exe'), 'Invoicegpj.exe');
    assert.equal(documentClientName('  Example\u200B \n\t Agent\u0007 '), 'Example Agent');
    assert.equal(documentClientName('\u2066\u2069'), null);
    assert.equal(documentClientName('x'.repeat(300))?.length, 100);
    const clientId = serve('/agents/disguised.json', { client_name: 'Trusted\u202E Agent' });
    let consentHtml = '';
    await authorize(new Browser(t.url), await discover(t.url, clientId), { redirectUri: REDIRECT, onConsentPage: (html) => (consentHtml = html) });
    assert.match(consentHtml, /Trusted Agent/);
    assert.doesNotMatch(consentHtml, /\u202E/);
  });

  it('refuses documents that do not describe an acceptable public client', async () => {
    const cases: Array<[string, string]> = [
      ['another client_id', serve('/bad/mismatch.json', { client_id: `${origin}/elsewhere.json` })],
      ['a shared secret', serve('/bad/secret.json', { token_endpoint_auth_method: 'client_secret_basic' })],
      ['a secret in the document', serve('/bad/secret-field.json', { client_secret: 'x'.repeat(40) })],
      ['private_key_jwt without jwks_uri', serve('/bad/jwt.json', { token_endpoint_auth_method: 'private_key_jwt' })],
      ['keys by value', serve('/bad/jwks-inline.json', { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } })],
      ['keys on a denied host', serve('/bad/jwks-denied.json', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: `https://127.0.0.1:${new URL(origin).port}/jwks.json` })],
      ['keys over plain http', serve('/bad/jwks-http.json', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: `http://localhost:${new URL(origin).port}/jwks.json` })],
      ['an http redirect URI off loopback', serve('/bad/http-redirect.json', { redirect_uris: ['http://app.example.com/callback'] })],
      ['client credentials', serve('/bad/machine.json', { grant_types: ['client_credentials'] })],
      ['a redirect', (served.set('/bad/moved.json', { status: 302, body: '', headers: { location: `${origin}/agents/example.json` } }), `${origin}/bad/moved.json`)],
      ['oversize', serve('/bad/big.json', { client_name: 'x'.repeat(6_000) })],
      ['not JSON', (served.set('/bad/html.json', { body: '<html>hello</html>', headers: { 'content-type': 'text/html' } }), `${origin}/bad/html.json`)],
      ['missing', `${origin}/bad/none.json`],
      // A status no Response can carry: a refusal, never a crash of the fetching process.
      ['status 999', serve('/bad/status.json', {}, { status: 999 })],
      ['slow', serve('/bad/slow.json', {}, { delayMs: 4_000 })],
    ];
    for (const [what, clientId] of cases) {
      const answer = await start(clientId);
      assert.equal(answer.status, 400, `${what}: ${answer.status} ${answer.body.slice(0, 200)}`);
      assert.match(answer.body, /invalid_client|invalid_client_metadata/i, what);
    }
  });

  it('never fetches from a denied host', async () => {
    const before = fetched.length;
    const denied = serve('/denied.json').replace('localhost', '127.0.0.1');
    const answer = await start(denied);
    assert.equal(answer.status, 400);
    assert.equal(fetched.length, before, 'nothing was fetched');
  });

  it('without OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS, fetches nothing from a loopback or metadata address', async () => {
    const strict = createDocumentFetch({ policy: { allowHttp: false, allowPrivate: false }, ca: readFileSync(CERT, 'utf8') });
    const before = fetched.length;
    for (const url of [`${origin}/agents/example.json`, `https://127.0.0.1:${new URL(origin).port}/agents/example.json`, 'https://169.254.169.254/latest/meta-data']) {
      await assert.rejects(strict(url), (error: { code?: string }) => error.code === 'URL_NOT_ALLOWED' || error.code === 'ADDRESS_NOT_ALLOWED', url);
    }
    // A name that resolves to loopback is refused at connection time, by the pinned lookup.
    const resolving = createDocumentFetch({ policy: { allowHttp: false, allowPrivate: false }, ca: readFileSync(CERT, 'utf8'), resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    await assert.rejects(resolving(`https://agent.example:${new URL(origin).port}/agents/example.json`), (error: { code?: string }) => error.code === 'ADDRESS_NOT_ALLOWED');
    assert.equal(fetched.length, before, 'nothing reached the server');
  });
});
