/**
 * Issue 33: an MCP client with no prior setup connects to an MCP server protected by
 * gatehouse-protect, through Gatehouse. The official MCP TypeScript SDK's client
 * (@modelcontextprotocol/sdk) knows only the server's URL: the server's 401 names its protected
 * resource metadata (RFC 9728), which names Gatehouse, whose metadata (RFC 8414) says it takes
 * client ID metadata documents; the client's id is its document's https URL (served on loopback
 * with a test certificate authority); the person signs in and consents in Chromium, the consent
 * page naming the client's host; the tool call then succeeds with a token whose `aud` is the MCP
 * server. Separately, a client without a document registers itself (open registration, RFC 7591)
 * and does the same. A token for another resource is refused.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { decodeJwt } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createRpUser, discover, listeningApp, registerClient, USER, type ListeningApp } from '../helpers/oidc-rp.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, type Browser, type Page } from '../helpers/browser.ts';
import { createProtector } from '../../packages/protect/src/protect.ts';
import { toNodeMiddleware, type ProtectedRequest } from '../../packages/protect/src/node.ts';

const CERT = join(REPO_ROOT, 'test/fixtures/https-localhost.crt');
const KEY = join(REPO_ROOT, 'test/fixtures/https-localhost.key');
const chromium = chromiumAvailability();

/** An MCP server: one tool, behind gatehouse-protect as a protected resource. */
async function startMcpServer(issuer: () => string): Promise<{ server: Server; url: string; calls: Array<{ clientId: string | null; user: string | null }> }> {
  const calls: Array<{ clientId: string | null; user: string | null }> = [];
  const server = createHttpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  let middleware: ReturnType<typeof toNodeMiddleware> | undefined;
  server.on('request', (req: ProtectedRequest, res) => {
    middleware ??= toNodeMiddleware(
      createProtector({
        issuer: issuer(),
        audience: url,
        cookieNames: [],
        rules: { protectedPrefixes: ['/mcp'], publicPrefixes: [], roleRequirements: [], scopeRequirements: [{ prefix: '/mcp', scopes: ['mcp:tools'] }] },
        resourceMetadata: { name: 'Example MCP server' },
      }),
    );
    middleware(req, res, () => {
      const mcp = new McpServer({ name: 'example', version: '1.0.0' });
      mcp.registerTool('whoami', { description: 'Who the token speaks for' }, async () => {
        calls.push({ clientId: req.gatehouseClient?.clientId ?? null, user: req.gatehouse?.userId ?? null });
        return { content: [{ type: 'text', text: `hello ${req.gatehouse?.userId ?? 'nobody'}` }] };
      });
      // Stateless: a server and a transport per request.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      mcp.connect(transport).then(() => transport.handleRequest(req, res), () => res.destroy());
    });
  });
  return { server, url, calls };
}

/** The MCP client's side of OAuth, in memory, with a client ID metadata document's URL as its id. */
class MemoryAuthProvider implements OAuthClientProvider {
  saved?: OAuthTokens;
  information?: OAuthClientInformationMixed;
  verifier = '';
  authorizationUrl?: URL;
  /** Undefined: the client registers itself (RFC 7591) instead. */
  readonly clientMetadataUrl: string | undefined;
  readonly redirectUrl: string;
  constructor(clientMetadataUrl: string | undefined, redirectUrl: string) {
    this.clientMetadataUrl = clientMetadataUrl;
    this.redirectUrl = redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Example Agent', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe('an MCP client (the official SDK) connects to an MCP server protected by gatehouse-protect, through Gatehouse, with no prior setup', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let database: TestDatabase;
  let t: ListeningApp;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let documents: HttpsServer;
  let callback: Server;
  let browser: Browser | undefined;
  let clientMetadataUrl: string;
  let redirectUrl: string;
  let userId: string;
  const codes: string[] = [];

  before(async () => {
    let issuer = '';
    mcp = await startMcpServer(() => issuer);
    // Where the person's browser comes back with the code: the MCP client's loopback listener.
    callback = createHttpServer((req, res) => {
      const code = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('code');
      if (code !== null) codes.push(code);
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Done</title><h1>You can close this window</h1>');
    });
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    // The client's metadata document, on https.
    documents = createHttpsServer({ cert: readFileSync(CERT), key: readFileSync(KEY) }, (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ client_id: clientMetadataUrl, client_name: 'Example Agent', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }));
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    clientMetadataUrl = `https://localhost:${(documents.address() as AddressInfo).port}/agent/client.json`;

    database = await createSqliteDatabase();
    t = await listeningApp(database, {
      OIDC_PROVIDER_RESOURCES: `${mcp.url}=mcp:tools,http://127.0.0.1:1/other=mcp:tools`,
      OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true',
      OIDC_PROVIDER_CIMD_CA_FILE: CERT,
      OIDC_PROVIDER_REGISTRATION: 'open',
    });
    issuer = t.url;
    userId = (await createRpUser(t)).id;
    browser = await launchBrowser();
  });
  after(async () => {
    await closeBrowser(browser);
    for (const server of [mcp?.server, callback, documents]) {
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    }
    await t?.close();
    await database?.drop();
  });

  /** The SDK's whole flow: refused, the person authorizes in Chromium, the tool call; the client id it used. */
  async function connectAndCall(page: Page, provider: MemoryAuthProvider, consentNames: RegExp): Promise<string> {
    const first = new Client({ name: 'example-agent', version: '1.0.0' });
    await assert.rejects(first.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider })), UnauthorizedError, 'no token yet: the person must authorize');
    assert.ok(provider.authorizationUrl, 'the SDK found Gatehouse and built the authorization request');
    const authorization = provider.authorizationUrl;
    const clientId = authorization.searchParams.get('client_id')!;
    assert.equal(authorization.origin, t.url);
    assert.equal(authorization.searchParams.get('resource'), mcp.url);
    assert.equal(authorization.searchParams.get('scope'), 'mcp:tools', 'the scope the resource metadata names');
    assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');

    // The person, in a browser: Gatehouse's sign-in page (once), then its consent page.
    const codesBefore = codes.length;
    await page.goto(authorization.href);
    if (new URL(page.url()).pathname === '/auth/signin') {
      await page.getByLabel('Email').fill(USER.email);
      await page.getByLabel('Password').fill(USER.password);
      await page.getByRole('button', { name: 'Login', exact: true }).click();
    }
    await page.waitForURL((url) => url.pathname.startsWith('/oidc/interaction/'));
    assert.match((await page.locator('main').textContent()) ?? '', consentNames);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(redirectUrl));
    assert.equal(codes.length, codesBefore + 1);

    const transport = new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider });
    await transport.finishAuth(codes.at(-1)!);
    const claims = decodeJwt(provider.saved!.access_token);
    assert.equal(claims.aud, mcp.url, 'the token is for the MCP server and nothing else');
    assert.equal(claims.client_id, clientId);
    assert.equal(claims.sub, userId);

    const agent = new Client({ name: 'example-agent', version: '1.0.0' });
    await agent.connect(transport);
    const result = (await agent.callTool({ name: 'whoami' })) as { content: Array<{ type: string; text: string }> };
    assert.equal(result.content[0]?.text, `hello ${userId}`);
    assert.deepEqual(mcp.calls.at(-1), { clientId, user: userId });
    await agent.close();
    return clientId;
  }

  it('discovers Gatehouse from the server, uses its metadata document as its client id, and calls the tool once the person consents', (t2) =>
    withPage(t2, browser!, {}, async (page) => {
      const clientId = await connectAndCall(page, new MemoryAuthProvider(clientMetadataUrl, redirectUrl), new RegExp(`known only by its address, localhost:${new URL(clientMetadataUrl).port}`));
      assert.equal(clientId, clientMetadataUrl, 'the metadata document is the client id');
    }));

  it('registers itself where it has no metadata document (open registration), and calls the tool once the person consents', (t2) =>
    withPage(t2, browser!, {}, async (page) => {
      const provider = new MemoryAuthProvider(undefined, redirectUrl);
      const clientId = await connectAndCall(page, provider, /Example Agent/);
      assert.equal(provider.information?.client_id, clientId);
      const registered = await t.services.oidcClients.show(clientId);
      assert.equal(registered?.origin, 'open_registration');
      assert.equal(registered?.isFirstParty, false);
    }));

  it('refuses a token for another resource, with the challenge that leads back to Gatehouse', async () => {
    const machine = await registerClient(t, { name: 'Other', grantTypes: ['client_credentials'] });
    const config = await discover(t.url, machine.clientId, machine.clientSecret);
    const other = (await oidc.clientCredentialsGrant(config, { scope: 'mcp:tools', resource: 'http://127.0.0.1:1/other' })).access_token;
    const response = await fetch(mcp.url, { method: 'POST', headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('www-authenticate'), `Bearer error="invalid_token", resource_metadata="${new URL(mcp.url).origin}/.well-known/oauth-protected-resource/mcp"`);
  });
});
