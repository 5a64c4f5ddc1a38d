/**
 * An OpenID Connect connection's requests to its provider (discovery, keys, the token request) go
 * through the outbound fetch the SAML metadata and the webhooks use, not openid-client's own:
 * - an issuer on an address the rules refuse (loopback, once SSO_ALLOW_PRIVATE_TARGETS is off) is
 *   refused before anything connects: the browser goes to /auth/error?error=ProviderUnreachable and
 *   `sso.signin_failed` says SSO_IDP_ADDRESS_REFUSED;
 * - a discovery document whose token endpoint is the cloud metadata address (refused even with
 *   SSO_ALLOW_PRIVATE_TARGETS) gets no token request: the callback is refused, SSO_IDP_ADDRESS_REFUSED;
 * - the discovery is not followed through a redirect.
 * Tests allow loopback (SSO_ALLOW_PRIVATE_TARGETS=true) as the webhooks' do, to reach the stand-in provider.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

/** A stand-in provider: its discovery document (with what a test puts in it), and every request it heard. */
async function startProvider(document: (issuer: string) => Record<string, unknown>, answer?: (request: IncomingMessage) => { status: number; headers: Record<string, string> } | null) {
  const heard: string[] = [];
  const server: Server = createServer((request, response) => {
    heard.push(`${request.method} ${request.url}`);
    const special = answer?.(request) ?? null;
    if (special !== null) return void response.writeHead(special.status, special.headers).end();
    if (request.url === '/.well-known/openid-configuration') return void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document(issuer)));
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { issuer, heard, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const discovery = (issuer: string, overrides: Record<string, unknown> = {}) => ({
  issuer,
  authorization_endpoint: `${issuer}/authorize`,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
  response_types_supported: ['code'],
  subject_types_supported: ['public'],
  id_token_signing_alg_values_supported: ['RS256'],
  code_challenge_methods_supported: ['S256'],
  ...overrides,
});

for (const backend of await backends()) {
  describe(`SSO over OpenID Connect: the outbound rules (${backend.name})`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    /** Allows loopback (the stand-in provider); `strict` is the same database under the default rules. */
    let open: TestApp;
    let strict: TestApp;
    let organizationId: string;

    before(async () => {
      database = await backend.create();
      open = await createTestApp(database, { env: { SSO_ALLOW_PRIVATE_TARGETS: 'true' } });
      strict = await createTestApp(database);
      const owner = await createUser(open.services, { email: `owner-${backend.name}@example.com`, password: 'correct horse battery staple' });
      const org = await open.services.organizations.create({ name: 'Outbound Inc' }, owner.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      organizationId = org.organization.id;
    });
    after(async () => {
      await open?.close();
      await strict?.close();
      await database?.drop();
    });

    async function connectionTo(issuer: string): Promise<string> {
      const created = await open.services.sso.connections.create(organizationId, { protocol: 'oidc', name: `IdP ${issuer}`, issuer, clientId: 'gatehouse', clientSecret: 'a-client-secret-0123456789' }, SYSTEM_SOURCE);
      assert.ok(created.ok, JSON.stringify(created));
      return created.connection.id;
    }
    const start = async (t: TestApp, connectionId: string) => {
      const browser = await formBrowser(t.app);
      const started = await postForm(t.app, browser, `/sso/${connectionId}/start`, { callbackUrl: '/dashboard' }, new URL(t.config.authUrl).origin);
      assert.equal(started.statusCode, 303, started.body);
      return { browser, location: started.headers.location as string };
    };
    const lastFailure = async (t: TestApp, connectionId: string) =>
      (await t.services.audit.listEvents({ type: 'sso.signin_failed', limit: 100 })).events.find((event) => event.details?.['connectionId'] === connectionId)?.reason ?? null;

    it('refuses an issuer on an address the rules refuse, before connecting: SSO_IDP_ADDRESS_REFUSED', async () => {
      const provider = await startProvider((issuer) => discovery(issuer));
      try {
        const connectionId = await connectionTo(provider.issuer);
        // The same connection under the default rules (SSO_ALLOW_PRIVATE_TARGETS off): loopback is refused.
        const refused = await start(strict, connectionId);
        assert.equal(refused.location, '/auth/error?error=ProviderUnreachable');
        assert.deepEqual(provider.heard, [], 'nothing connected to the provider');
        assert.equal(await lastFailure(strict, connectionId), 'SSO_IDP_ADDRESS_REFUSED');
        // Allowed, it is discovered through the same fetch.
        const allowed = await start(open, connectionId);
        assert.equal(new URL(allowed.location).origin, provider.issuer);
        assert.deepEqual(provider.heard, ['GET /.well-known/openid-configuration']);
      } finally {
        await provider.close();
      }
    });

    it('sends no token request to the cloud metadata address a discovery document names: SSO_IDP_ADDRESS_REFUSED', async () => {
      const provider = await startProvider((issuer) => discovery(issuer, { token_endpoint: 'http://169.254.169.254/latest/meta-data/token' }));
      try {
        const connectionId = await connectionTo(provider.issuer);
        const { browser, location } = await start(open, connectionId);
        const state = new URL(location).searchParams.get('state')!;
        const callback = await open.app.inject({ method: 'GET', url: `/sso/oidc/${connectionId}/callback?code=a-code&state=${encodeURIComponent(state)}&iss=${encodeURIComponent(provider.issuer)}`, headers: { cookie: browser.jar.header() } });
        assert.equal(callback.statusCode, 303);
        assert.equal(callback.headers.location, '/auth/error?error=ProviderUnreachable');
        assert.equal(await lastFailure(open, connectionId), 'SSO_IDP_ADDRESS_REFUSED');
      } finally {
        await provider.close();
      }
    });

    it('does not follow a redirect at discovery', async () => {
      const target = await startProvider((issuer) => discovery(issuer));
      const provider = await startProvider(
        (issuer) => discovery(issuer),
        (request) => (request.url === '/.well-known/openid-configuration' ? { status: 302, headers: { location: `${target.issuer}/.well-known/openid-configuration` } } : null),
      );
      try {
        const connectionId = await connectionTo(provider.issuer);
        const { location } = await start(open, connectionId);
        assert.equal(location, '/auth/error?error=ProviderUnreachable');
        assert.deepEqual(target.heard, [], 'the redirect target heard nothing');
      } finally {
        await provider.close();
        await target.close();
      }
    });
  });
}
