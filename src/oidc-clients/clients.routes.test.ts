/**
 * `/api/admin/clients` on the real app and storage: ADMIN only (401 / 403 before the body is
 * read), a secret in the create and rotate answers only (no-store), never in a list or a show,
 * the rules' refusals as 422 with stable codes and reasons, and step-up for a registry change by
 * an administrator who has a second factor.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { clientSecretMatches } from './clients.service.ts';
import { OPENAPI_PATH } from '../app.ts';

const PASSWORD = 'correct horse battery staple';
const WEB = 'https://app.example.com/callback';
const API = '/api/admin/clients';

for (const backend of await backends()) {
  describe(`client registry API on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock });
    let count = 0;

    const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token?: string, payload?: object) =>
      t.app.inject({ method, url, ...(payload !== undefined && { payload }), headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

    const signedIn = (roles: string[]) => createSignedInUser(t, { email: `api${++count}@example.com`, password: PASSWORD, roles });
    const secretHash = async (id: string) => (await t.services.storage.db.selectFrom('oidc_clients').select('secret_hash').where('id', '=', id).executeTakeFirstOrThrow()).secret_hash;

    it('answers 401 without a session and 403 to a non-admin, before reading the body', async () => {
      const { token } = await signedIn(['EDITOR']);
      for (const [method, url] of [
        ['GET', API],
        ['POST', API],
        ['GET', `${API}/some-id`],
        ['PATCH', `${API}/some-id`],
        ['POST', `${API}/some-id/rotate-secret`],
        ['DELETE', `${API}/some-id`],
      ] as const) {
        const payload = method === 'POST' || method === 'PATCH' ? { nonsense: true } : undefined;
        const anonymous = await call(method, url, undefined, payload);
        assert.equal(anonymous.statusCode, 401, `${method} ${url}`);
        assert.equal(anonymous.json().error, 'UNAUTHENTICATED');
        const plain = await call(method, url, token, payload);
        assert.equal(plain.statusCode, 403, `${method} ${url}`);
        assert.equal(plain.json().error, 'FORBIDDEN');
      }
    });

    it('registers a client (201, its secret this once), lists and shows it without the secret', async () => {
      const { token } = await signedIn(['ADMIN']);
      const created = await call('POST', API, token, { name: 'Example App', redirectUris: [WEB], postLogoutRedirectUris: ['https://app.example.com/bye'], firstParty: true });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.headers['cache-control'], 'no-store');
      const { client, clientSecret } = created.json();
      assert.equal(typeof clientSecret, 'string');
      assert.deepEqual({ ...client, createdAt: undefined, updatedAt: undefined, clientId: undefined }, {
        clientId: undefined,
        name: 'Example App',
        public: false,
        firstParty: true,
        redirectUris: [WEB],
        postLogoutRedirectUris: ['https://app.example.com/bye'],
        grantTypes: ['authorization_code', 'refresh_token'],
        idTokenSignedResponseAlg: 'EdDSA',
        createdAt: undefined,
        updatedAt: undefined,
        secretRotatedAt: null,
        backchannelLogoutUri: null,
        origin: 'admin',
        lastUsedAt: null,
        exchangeResources: [],
        dpopBoundAccessTokens: false,
        jwksUri: null,
      });
      const hash = await secretHash(client.clientId);
      assert.ok(hash !== null && clientSecretMatches(clientSecret, hash));

      const list = await call('GET', API, token);
      assert.equal(list.statusCode, 200);
      assert.ok(list.json().clients.some((listed: { clientId: string }) => listed.clientId === client.clientId));
      const shown = await call('GET', `${API}/${client.clientId}`, token);
      assert.equal(shown.statusCode, 200);
      assert.deepEqual(shown.json(), client);
      for (const body of [list.body, shown.body]) {
        assert.ok(!body.includes(clientSecret), 'no secret');
        assert.ok(!body.includes(hash), 'no hash');
        assert.doesNotMatch(body, /secret_hash|clientSecret"/);
      }

      const publicClient = await call('POST', API, token, { name: 'SPA', public: true, redirectUris: ['http://localhost:5173/cb'] });
      assert.equal(publicClient.statusCode, 201, publicClient.body);
      assert.equal('clientSecret' in publicClient.json(), false);
      assert.equal(publicClient.json().client.public, true);
    });

    it('refuses what the rules refuse with 422 and a stable code and reason per problem', async () => {
      const { token } = await signedIn(['ADMIN']);
      const insecure = await call('POST', API, token, { name: 'A', redirectUris: ['http://app.example.com/cb', `${WEB}#x`] });
      assert.equal(insecure.statusCode, 422);
      assert.equal(insecure.json().error, 'INVALID_REDIRECT_URI');
      assert.deepEqual(insecure.json().errors.map((e: { field: string; reason: string }) => [e.field, e.reason]), [
        ['redirectUris.0', 'HTTPS_REQUIRED'],
        ['redirectUris.1', 'FRAGMENT_NOT_ALLOWED'],
      ]);
      const implicit = await call('POST', API, token, { name: 'A', redirectUris: [WEB], grantTypes: ['implicit'] });
      assert.equal(implicit.statusCode, 422);
      assert.equal(implicit.json().error, 'INVALID_CLIENT_METADATA');
      assert.equal(implicit.json().errors[0].reason, 'GRANT_TYPE_REFUSED');
      assert.match(implicit.json().errors[0].message, /implicit/);
      const publicMachine = await call('POST', API, token, { name: 'A', public: true, grantTypes: ['client_credentials'] });
      assert.equal(publicMachine.json().errors[0].reason, 'CLIENT_CREDENTIALS_PUBLIC');
      const customConfidential = await call('POST', API, token, { name: 'A', redirectUris: ['com.example.app:/cb'] });
      assert.equal(customConfidential.json().errors[0].reason, 'CUSTOM_SCHEME_PUBLIC_ONLY');
      const backchannel = await call('POST', API, token, { name: 'A', redirectUris: [WEB], backchannelLogoutUri: 'http://app.example.com/logout' });
      assert.equal(backchannel.statusCode, 422);
      assert.deepEqual(backchannel.json().errors.map((e: { field: string; reason: string }) => [e.field, e.reason]), [['backchannelLogoutUri', 'HTTPS_REQUIRED']]);
      const fragment = await call('POST', API, token, { name: 'A', redirectUris: [WEB], backchannelLogoutUri: 'https://app.example.com/logout#x' });
      assert.equal(fragment.json().errors[0].reason, 'FRAGMENT_NOT_ALLOWED');
      const badShape = await call('POST', API, token, { name: 5, public: 'yes', idTokenSignedResponseAlg: 'HS256' });
      assert.equal(badShape.statusCode, 422);
      assert.equal(badShape.json().error, 'VALIDATION_ERROR');
    });

    it('sets and replaces a confidential client’s exchange policy (token exchange), and refuses one for a public client or a bad URI', async () => {
      const { token } = await signedIn(['ADMIN']);
      const created = await call('POST', API, token, { name: 'Agent', grantTypes: ['client_credentials'], exchangeResources: ['https://b.example.com', 'https://b.example.com'] });
      assert.equal(created.statusCode, 201, created.body);
      const { clientId, exchangeResources } = created.json().client;
      assert.deepEqual(exchangeResources, ['https://b.example.com']);
      const changed = await call('PATCH', `${API}/${clientId}`, token, { exchangeResources: ['https://c.example.com'] });
      assert.equal(changed.statusCode, 200, changed.body);
      assert.deepEqual(changed.json().exchangeResources, ['https://c.example.com']);
      const audited = (await t.services.audit.listEvents({ type: 'oidc_client.updated', limit: 5 })).events.find((event) => event.details?.clientId === clientId);
      assert.deepEqual(audited?.details?.fields, ['exchangeResources']);
      assert.deepEqual((await call('PATCH', `${API}/${clientId}`, token, { exchangeResources: [] })).json().exchangeResources, []);
      const publicAgent = await call('POST', API, token, { name: 'SPA', public: true, redirectUris: ['http://localhost:5173/cb'], exchangeResources: ['https://b.example.com'] });
      assert.equal(publicAgent.statusCode, 422);
      assert.deepEqual(publicAgent.json().errors.map((e: { field: string; reason: string }) => [e.field, e.reason]), [['exchangeResources', 'EXCHANGE_PUBLIC']]);
      const relative = await call('PATCH', `${API}/${clientId}`, token, { exchangeResources: ['/b', 'https://b.example.com#x'] });
      assert.equal(relative.statusCode, 422);
      assert.deepEqual(relative.json().errors.map((e: { field: string; reason: string }) => [e.field, e.reason]), [['exchangeResources.0', 'INVALID_URI'], ['exchangeResources.1', 'INVALID_URI']]);
      // A client that only exchanges needs no grant type of its own.
      const onlyExchanges = await call('POST', API, token, { name: 'API B', grantTypes: [], exchangeResources: ['https://c.example.com'] });
      assert.equal(onlyExchanges.statusCode, 201, onlyExchanges.body);
      assert.equal((await call('POST', API, token, { name: 'Nothing', grantTypes: [] })).json().errors[0].reason, 'GRANT_TYPE_REQUIRED');
    });

    it('rotates a secret (the old one stops matching), refuses a public client, and deletes', async () => {
      const { token } = await signedIn(['ADMIN']);
      const { client, clientSecret: old } = (await call('POST', API, token, { name: 'Rotating', redirectUris: [WEB] })).json();
      const rotated = await call('POST', `${API}/${client.clientId}/rotate-secret`, token, {});
      assert.equal(rotated.statusCode, 200, rotated.body);
      assert.equal(rotated.headers['cache-control'], 'no-store');
      const { clientId, clientSecret } = rotated.json();
      assert.equal(clientId, client.clientId);
      const hash = (await secretHash(clientId))!;
      assert.equal(clientSecretMatches(clientSecret, hash), true);
      assert.equal(clientSecretMatches(old, hash), false);
      assert.ok((await call('GET', `${API}/${clientId}`, token)).json().secretRotatedAt !== null);

      const spa = (await call('POST', API, token, { name: 'SPA', public: true, redirectUris: [WEB] })).json().client;
      const refused = await call('POST', `${API}/${spa.clientId}/rotate-secret`, token, {});
      assert.equal(refused.statusCode, 409);
      assert.equal(refused.json().error, 'PUBLIC_CLIENT_HAS_NO_SECRET');

      const patched = await call('PATCH', `${API}/${clientId}`, token, { name: 'Renamed', redirectUris: ['https://other.example.com/cb'] });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.equal(patched.json().name, 'Renamed');
      // A back-channel logout URI: set, shown to the provider, and taken away again.
      const withBackchannel = await call('PATCH', `${API}/${clientId}`, token, { backchannelLogoutUri: 'https://other.example.com/backchannel' });
      assert.equal(withBackchannel.json().backchannelLogoutUri, 'https://other.example.com/backchannel');
      const metadata = (await t.services.oidcClients.providerMetadata(clientId))!;
      assert.equal(metadata.backchannel_logout_uri, 'https://other.example.com/backchannel');
      assert.equal(metadata.backchannel_logout_session_required, true);
      assert.equal((await call('PATCH', `${API}/${clientId}`, token, { backchannelLogoutUri: null })).json().backchannelLogoutUri, null);
      assert.equal((await t.services.oidcClients.providerMetadata(clientId))!.backchannel_logout_uri, undefined);
      const badPatch = await call('PATCH', `${API}/${clientId}`, token, { redirectUris: ['https://*.example.com/cb'] });
      assert.equal(badPatch.statusCode, 422);
      assert.equal(badPatch.json().error, 'INVALID_REDIRECT_URI');

      const deleted = await call('DELETE', `${API}/${clientId}`, token);
      assert.equal(deleted.statusCode, 200);
      assert.deepEqual(deleted.json(), { ok: true });
      for (const [method, url] of [
        ['GET', `${API}/${clientId}`],
        ['DELETE', `${API}/${clientId}`],
        ['POST', `${API}/${clientId}/rotate-secret`],
        ['PATCH', `${API}/${clientId}`],
      ] as const) {
        const gone = await call(method, url, token, method === 'POST' || method === 'PATCH' ? { name: 'X' } : undefined);
        assert.equal(gone.statusCode, 404, `${method} ${url}`);
        assert.equal(gone.json().error, 'CLIENT_NOT_FOUND');
      }
    });

    it('appears in the OpenAPI document', async () => {
      const spec = (await t.app.inject({ method: 'GET', url: OPENAPI_PATH })).json();
      assert.ok(spec.paths[API]?.post, 'POST /api/admin/clients');
      assert.ok(spec.paths[`${API}/{id}/rotate-secret`]?.post);
      assert.ok(spec.paths[`${API}/{id}`]?.delete);
    });

    it('asks an administrator who has a second factor to have used it recently to change the registry', async () => {
      const { token: enrolling, email } = await signedIn(['ADMIN']);
      // A session from before the factor existed.
      const older = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } })).json().token as string;
      const { secret } = (await call('POST', '/api/auth/mfa/totp/setup', enrolling, {})).json();
      assert.equal((await call('POST', '/api/auth/mfa/totp/enable', enrolling, { code: totpCode(secret, clock()) })).statusCode, 200);
      clock.advance(TOTP_STEP_MS);

      assert.equal((await call('GET', API, older)).statusCode, 200, 'reading needs no step-up');
      const refused = await call('POST', API, older, { name: 'Stale', redirectUris: [WEB] });
      assert.equal(refused.statusCode, 403);
      assert.equal(refused.json().error, 'REAUTH_REQUIRED');
      const stepped = (await call('POST', '/api/auth/mfa/step-up', older, { code: totpCode(secret, clock()) })).json().token as string;
      assert.equal((await call('POST', API, stepped, { name: 'Fresh', redirectUris: [WEB] })).statusCode, 201);
    });
  });
}
