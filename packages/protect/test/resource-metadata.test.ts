/**
 * Issue 33.3: an API or MCP server guarded by gatehouse-protect is a protected resource (RFC 9728).
 * A client that knows only the resource's URL finds Gatehouse from it, as an MCP client does: the
 * 401 names the metadata (`resource_metadata`), the metadata names Gatehouse, and Gatehouse's
 * metadata (RFC 8414 and OpenID discovery, which agree) has what such a client needs. A live
 * Gatehouse on loopback, the protected resource on node:http through the Node middleware.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { backends, type TestDatabase } from '../../../test/helpers/databases.ts';
import { discover, listeningApp, registerClient, type ListeningApp } from '../../../test/helpers/oidc-rp.ts';
import { createProtector, type ProtectionRules } from '../src/protect.ts';
import { toNodeMiddleware, type ProtectedRequest } from '../src/node.ts';

const RULES: ProtectionRules = { protectedPrefixes: ['/mcp'], publicPrefixes: [], roleRequirements: [], scopeRequirements: [{ prefix: '/mcp', scopes: ['mcp:tools'] }] };

/** The parameters of a `Bearer` challenge (RFC 6750 §3), quoted values unquoted. */
function challengeOf(header: string | null): Record<string, string> {
  assert.ok(header !== null && header.startsWith('Bearer'), `a Bearer challenge: ${header}`);
  return Object.fromEntries([...header.slice('Bearer'.length).matchAll(/([a-z_]+)="([^"]*)"/g)].map(([, name, value]) => [name!, value!]));
}

describe('gatehouse-protect as a protected resource (RFC 9728): discovered from its URL alone', () => {
  let database: TestDatabase;
  let t: ListeningApp;
  let server: Server;
  let origin: string;
  let resource: string;
  let toolsToken: string;
  let otherScopeToken: string;

  before(async () => {
    // The resource's port first: its URL is what Gatehouse issues tokens for.
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    resource = `${origin}/mcp`;
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await listeningApp(database, { OIDC_PROVIDER_RESOURCES: `${resource}=mcp:tools mcp:admin` });
    const middleware = toNodeMiddleware(createProtector({ issuer: t.url, audience: resource, rules: RULES, resourceMetadata: { name: 'Example MCP server' } }));
    server.on('request', (req: ProtectedRequest, res) => {
      middleware(req, res, () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ ok: true, client: req.gatehouseClient?.clientId ?? null }));
      });
    });
    const machine = await registerClient(t, { name: 'Agent', grantTypes: ['client_credentials'] });
    const config = await discover(t.url, machine.clientId, machine.clientSecret);
    toolsToken = (await client.clientCredentialsGrant(config, { scope: 'mcp:tools', resource })).access_token;
    otherScopeToken = (await client.clientCredentialsGrant(config, { scope: 'mcp:admin', resource })).access_token;
  });
  after(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
    await database?.drop();
  });

  it('answers 401 with the metadata URL, which names Gatehouse; Gatehouse\'s metadata has what an MCP client needs', async () => {
    const refused = await fetch(resource, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(refused.status, 401, 'an MCP path is an API: no redirect to sign in');
    assert.equal(((await refused.json()) as { error: string }).error, 'UNAUTHENTICATED');
    const challenge = challengeOf(refused.headers.get('www-authenticate'));
    // RFC 9728 §3.1: the well-known path goes between the host and the resource's path.
    assert.equal(challenge.resource_metadata, `${origin}/.well-known/oauth-protected-resource/mcp`);

    const document = await fetch(challenge.resource_metadata!);
    assert.equal(document.status, 200);
    assert.equal(document.headers.get('access-control-allow-origin'), '*', 'a browser-based client may read it');
    const metadata = (await document.json()) as Record<string, unknown>;
    assert.deepEqual(metadata, { resource, authorization_servers: [t.url], scopes_supported: ['mcp:tools'], bearer_methods_supported: ['header'], resource_name: 'Example MCP server' });
    // The bare well-known URI, which some clients try, says the same.
    assert.deepEqual(await (await fetch(`${origin}/.well-known/oauth-protected-resource`)).json(), metadata);

    // RFC 8414 and OpenID discovery at the authorization server it names: the same, with PKCE S256
    // (an MCP client refuses a server without it), `iss` in responses (RFC 9207) and resource-bound tokens.
    const issuer = (metadata.authorization_servers as string[])[0]!;
    const oauth = (await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    const openid = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    for (const key of Object.keys(oauth)) assert.deepEqual(openid[key], oauth[key], `${key} agrees`);
    assert.equal(oauth.issuer, t.url);
    assert.deepEqual(oauth.code_challenge_methods_supported, ['S256']);
    assert.equal(oauth.authorization_response_iss_parameter_supported, true);
    for (const key of ['authorization_endpoint', 'token_endpoint', 'jwks_uri']) assert.equal(typeof oauth[key], 'string', key);
  });

  it('adds the metadata URL to invalid_token and insufficient_scope challenges; a token with the scope passes', async () => {
    const call = (token: string) => fetch(resource, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    const invalid = await call(`${toolsToken.slice(0, -4)}AAAA`);
    assert.equal(invalid.status, 401);
    assert.deepEqual(challengeOf(invalid.headers.get('www-authenticate')), { error: 'invalid_token', resource_metadata: `${origin}/.well-known/oauth-protected-resource/mcp` });

    const scope = await call(otherScopeToken);
    assert.equal(scope.status, 403);
    assert.deepEqual(challengeOf(scope.headers.get('www-authenticate')), { error: 'insufficient_scope', scope: 'mcp:tools', resource_metadata: `${origin}/.well-known/oauth-protected-resource/mcp` });

    const allowed = await call(toolsToken);
    assert.equal(allowed.status, 200);
    assert.equal(((await allowed.json()) as { ok: boolean }).ok, true);
  });

  it('refuses options that make no resource', () => {
    assert.throws(() => createProtector({ issuer: t.url, resourceMetadata: true }), /needs `resource`/, 'the audience is the issuer: no API');
    assert.throws(() => createProtector({ issuer: t.url, resourceMetadata: { resource: 'http://api.example.com/mcp' } }), /https URL/);
    assert.throws(() => createProtector({ issuer: t.url, resourceMetadata: { resource: 'https://api.example.com/mcp?x=1' } }), /without query/);
    const root = createProtector({ issuer: t.url, audience: 'https://api.example.com', resourceMetadata: true });
    return root.check(new Request('https://api.example.com/.well-known/oauth-protected-resource')).then(async (response) => {
      assert.equal(response?.status, 200);
      assert.equal(((await response!.json()) as { resource: string }).resource, 'https://api.example.com');
    });
  });
});
