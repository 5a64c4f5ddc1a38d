/**
 * The client registry's service on real storage (SQLite, and PostgreSQL where the helpers find
 * one): the rules on redirect URIs and grant types, the secret kept only as a hash and checked in
 * constant time, rotation, update, delete, the provider's view of a client, and the audit events.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { backends } from '../../test/helpers/databases.ts';
import { useTestApp } from '../../test/helpers/app.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { clientSecretMatches, hashClientSecret, type ClientInput, type CreateClientResult } from './clients.service.ts';
import { checkClientInput, MAX_NAME_LENGTH } from './client-rules.ts';

const WEB = 'https://app.example.com/callback';

/** The reasons of a refused registration, by field. */
function refusedFor(result: CreateClientResult): Array<[string, string]> {
  assert.equal(result.ok, false, 'refused');
  if (result.ok) return [];
  return result.problems.map((problem) => [problem.field, problem.reason]);
}

describe('client rules (no storage)', () => {
  const reasons = (input: Partial<ClientInput>) => {
    const result = checkClientInput({ name: 'App', ...input });
    return result.ok ? [] : result.problems.map((problem) => `${problem.field} ${problem.reason}`);
  };

  it('accepts https anywhere and plain http only on a loopback host', () => {
    assert.deepEqual(reasons({ redirectUris: [WEB, 'https://app.example.com:8443/cb?x=1'] }), []);
    for (const loopback of ['http://127.0.0.1:8080/cb', 'http://[::1]:8080/cb', 'http://localhost:3000/cb', 'http://localhost/cb']) {
      assert.deepEqual(reasons({ redirectUris: [loopback] }), [], loopback);
    }
    for (const plain of ['http://app.example.com/cb', 'http://127.0.0.2/cb', 'http://localhost.example.com/cb', 'http://10.0.0.1/cb']) {
      assert.deepEqual(reasons({ redirectUris: [plain] }), ['redirectUris.0 HTTPS_REQUIRED'], plain);
    }
  });

  it('refuses a fragment, a wildcard, a relative or malformed URI, credentials and whitespace', () => {
    assert.deepEqual(reasons({ redirectUris: [`${WEB}#done`] }), ['redirectUris.0 FRAGMENT_NOT_ALLOWED']);
    assert.deepEqual(reasons({ redirectUris: [`${WEB}#`] }), ['redirectUris.0 FRAGMENT_NOT_ALLOWED'], 'an empty fragment too');
    assert.deepEqual(reasons({ redirectUris: ['https://*.example.com/callback'] }), ['redirectUris.0 WILDCARD_NOT_ALLOWED']);
    assert.deepEqual(reasons({ redirectUris: ['https://app.example.com/*'] }), ['redirectUris.0 WILDCARD_NOT_ALLOWED']);
    for (const bad of ['/callback', 'app.example.com/callback', '//app.example.com/cb', 'https://', 'https://user:pw@app.example.com/cb', 'https://app.example.com/a b', `${WEB}\n`]) {
      assert.deepEqual(reasons({ redirectUris: [bad] }), ['redirectUris.0 INVALID_URI'], JSON.stringify(bad));
    }
    assert.deepEqual(reasons({ redirectUris: [WEB], postLogoutRedirectUris: ['http://app.example.com/bye', `${WEB}#x`] }), [
      'postLogoutRedirectUris.0 HTTPS_REQUIRED',
      'postLogoutRedirectUris.1 FRAGMENT_NOT_ALLOWED',
    ]);
  });

  it('allows a reverse-domain custom scheme for a public (native) client only', () => {
    assert.deepEqual(reasons({ redirectUris: ['com.example.app:/callback'] }), ['redirectUris.0 CUSTOM_SCHEME_PUBLIC_ONLY']);
    assert.deepEqual(reasons({ isPublic: true, redirectUris: ['com.example.app:/callback', 'http://127.0.0.1:7000/cb'] }), []);
    for (const scheme of ['myapp://callback', 'javascript:alert(1)', 'data:text/html,hi', 'file:///etc/passwd']) {
      assert.deepEqual(reasons({ isPublic: true, redirectUris: [scheme] }), ['redirectUris.0 CUSTOM_SCHEME_NOT_REVERSE_DOMAIN'], scheme);
    }
    // A native app's https must be a claimed URI, never a loopback one (the provider refuses it).
    assert.deepEqual(reasons({ isPublic: true, redirectUris: ['com.example.app:/callback', 'https://localhost/cb'] }), ['redirectUris.1 LOOPBACK_HTTPS_NOT_ALLOWED']);
    assert.deepEqual(reasons({ isPublic: true, redirectUris: ['https://localhost/cb'] }), [], 'a public web client may');
  });

  it('refuses implicit and password with a reason, and unknown grant types', () => {
    const result = checkClientInput({ name: 'App', redirectUris: [WEB], grantTypes: ['authorization_code', 'implicit', 'password', 'magic'] });
    assert.ok(!result.ok);
    assert.deepEqual(result.problems.map((problem) => problem.reason), ['GRANT_TYPE_REFUSED', 'GRANT_TYPE_REFUSED', 'UNKNOWN_GRANT_TYPE']);
    assert.match(result.problems[0]!.message, /implicit grant is not supported/);
    assert.match(result.problems[1]!.message, /password grant is not supported/);
  });

  it('holds the grant types together', () => {
    assert.deepEqual(reasons({ isPublic: true, grantTypes: ['client_credentials'] }), ['grantTypes CLIENT_CREDENTIALS_PUBLIC']);
    assert.deepEqual(reasons({ grantTypes: ['client_credentials'] }), [], 'a confidential machine client needs no redirect URI');
    assert.deepEqual(reasons({ grantTypes: ['refresh_token'] }), ['grantTypes REFRESH_TOKEN_WITHOUT_GRANT']);
    assert.deepEqual(reasons({ grantTypes: ['client_credentials', 'refresh_token'] }), ['grantTypes REFRESH_TOKEN_WITHOUT_GRANT']);
    assert.deepEqual(reasons({ isPublic: true, grantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'] }), []);
    assert.deepEqual(reasons({ grantTypes: [] }), ['grantTypes GRANT_TYPE_REQUIRED']);
    assert.deepEqual(reasons({}), ['redirectUris REDIRECT_URI_REQUIRED'], 'authorization_code (the default) needs a redirect URI');
  });

  it('holds the name to 1..100 characters without control characters, and the algorithm to EdDSA or RS256', () => {
    assert.deepEqual(reasons({ name: '   ', redirectUris: [WEB] }), ['name NAME_REQUIRED']);
    assert.deepEqual(reasons({ name: 'x'.repeat(MAX_NAME_LENGTH + 1), redirectUris: [WEB] }), ['name NAME_TOO_LONG']);
    assert.deepEqual(reasons({ name: '😀'.repeat(MAX_NAME_LENGTH), redirectUris: [WEB] }), [], 'characters, not UTF-16 units');
    assert.deepEqual(reasons({ name: 'a\nb', redirectUris: [WEB] }), ['name NAME_INVALID']);
    assert.deepEqual(reasons({ redirectUris: [WEB], idTokenSignedResponseAlg: 'RS256' }), []);
    assert.deepEqual(reasons({ redirectUris: [WEB], idTokenSignedResponseAlg: 'HS256' }), ['idTokenSignedResponseAlg UNSUPPORTED_ALG']);
  });

  it('keeps URIs exactly as written, each once', () => {
    const odd = 'https://App.Example.com:443/Call%62ack/?b=2&a=1';
    const result = checkClientInput({ name: ' App ', redirectUris: [odd, WEB, odd] });
    assert.ok(result.ok);
    assert.deepEqual(result.settings.redirectUris, [odd, WEB]);
    assert.equal(result.settings.name, 'App');
  });
});

describe('client secrets', () => {
  it('are hashed with SHA-256 (hex) and compared in constant time', () => {
    const secret = 'some-secret';
    assert.equal(hashClientSecret(secret), createHash('sha256').update(secret).digest('hex'));
    assert.equal(clientSecretMatches(secret, hashClientSecret(secret)), true);
    assert.equal(clientSecretMatches('other', hashClientSecret(secret)), false);
    assert.equal(clientSecretMatches(secret, 'not-a-hash'), false);
    assert.equal(clientSecretMatches(secret, hashClientSecret(secret).toUpperCase()), false);
  });
});

for (const backend of await backends()) {
  describe(`oidc clients service on ${backend.name}`, { skip: backend.skip }, () => {
    const t = useTestApp(backend);
    const service = () => t.services.oidcClients;

    async function create(input: Partial<ClientInput> = {}) {
      const result = await service().create({ name: 'Example App', redirectUris: [WEB], ...input }, SYSTEM_SOURCE);
      assert.ok(result.ok, JSON.stringify(result));
      return result;
    }

    const rowOf = (id: string) => t.services.storage.db.selectFrom('oidc_clients').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('registers a confidential client with a random id and a secret kept only as its hash', async () => {
      const { client, clientSecret } = await create({ postLogoutRedirectUris: ['https://app.example.com/bye'], isFirstParty: true });
      assert.match(client.id, /^[A-Za-z0-9_-]{22}$/, '128 bits, base64url');
      assert.ok(clientSecret !== undefined);
      assert.match(clientSecret, /^[A-Za-z0-9_-]{43}$/, '256 bits, base64url');
      const row = await rowOf(client.id);
      assert.equal(row.secret_hash, createHash('sha256').update(clientSecret).digest('hex'));
      assert.ok(!JSON.stringify(row).includes(clientSecret), 'the secret is nowhere in the row');
      assert.equal(Number(row.public), 0);
      assert.equal(Number(row.first_party), 1);
      assert.deepEqual(JSON.parse(row.redirect_uris), [WEB]);
      assert.deepEqual(JSON.parse(row.grant_types), ['authorization_code', 'refresh_token']);
      assert.equal(row.id_token_signed_response_alg, 'EdDSA');
      assert.equal(row.secret_rotated_at, null);
      assert.equal(clientSecretMatches(clientSecret, row.secret_hash!), true);

      const shown = await service().show(client.id);
      assert.deepEqual(shown, client);
      assert.ok(!JSON.stringify(shown).includes(row.secret_hash!), 'show() never carries the hash');
      assert.equal(await service().isFirstParty(client.id), true);
      assert.equal((await create()).client.id === client.id, false, 'ids differ');
    });

    it('registers a public client without a secret', async () => {
      const result = await create({ isPublic: true, redirectUris: ['com.example.app:/callback'], grantTypes: ['authorization_code'] });
      assert.equal(result.clientSecret, undefined);
      assert.equal('clientSecret' in result, false);
      const row = await rowOf(result.client.id);
      assert.equal(row.secret_hash, null);
      assert.equal(Number(row.public), 1);
      assert.equal(await service().isFirstParty(result.client.id), false);
    });

    it('refuses what the rules refuse, storing nothing', async () => {
      const before = (await service().list()).length;
      assert.deepEqual(refusedFor(await service().create({ name: 'A', redirectUris: ['http://app.example.com/cb'] }, SYSTEM_SOURCE)), [['redirectUris.0', 'HTTPS_REQUIRED']]);
      assert.deepEqual(refusedFor(await service().create({ name: 'A', redirectUris: [`${WEB}#frag`] }, SYSTEM_SOURCE)), [['redirectUris.0', 'FRAGMENT_NOT_ALLOWED']]);
      assert.deepEqual(refusedFor(await service().create({ name: 'A', redirectUris: ['com.example.app:/cb'] }, SYSTEM_SOURCE)), [['redirectUris.0', 'CUSTOM_SCHEME_PUBLIC_ONLY']]);
      assert.deepEqual(refusedFor(await service().create({ name: 'A', redirectUris: [WEB], grantTypes: ['implicit'] }, SYSTEM_SOURCE)), [['grantTypes', 'GRANT_TYPE_REFUSED']]);
      assert.deepEqual(refusedFor(await service().create({ name: 'A', redirectUris: [WEB], grantTypes: ['password'] }, SYSTEM_SOURCE)), [['grantTypes', 'GRANT_TYPE_REFUSED']]);
      assert.deepEqual(refusedFor(await service().create({ name: 'A', isPublic: true, grantTypes: ['client_credentials'] }, SYSTEM_SOURCE)), [['grantTypes', 'CLIENT_CREDENTIALS_PUBLIC']]);
      assert.equal((await service().list()).length, before);
    });

    it('accepts loopback http redirect URIs', async () => {
      const uris = ['http://127.0.0.1:8123/cb', 'http://[::1]:8123/cb', 'http://localhost:8123/cb'];
      const { client } = await create({ redirectUris: uris });
      assert.deepEqual((await service().show(client.id))!.redirectUris, uris);
    });

    it('rotates a confidential client’s secret: the old one stops matching at once', async () => {
      const { client, clientSecret: old } = await create();
      const rotated = await service().rotateSecret(client.id, SYSTEM_SOURCE);
      assert.ok(rotated.ok);
      assert.notEqual(rotated.clientSecret, old);
      const row = await rowOf(client.id);
      assert.equal(clientSecretMatches(old!, row.secret_hash!), false, 'the old secret no longer matches');
      assert.equal(clientSecretMatches(rotated.clientSecret, row.secret_hash!), true);
      assert.ok(row.secret_rotated_at !== null);
      assert.equal(rotated.client.secretRotatedAt, row.secret_rotated_at);
      const metadata = await service().providerMetadata(client.id);
      assert.equal(metadata?.client_secret, hashClientSecret(rotated.clientSecret));

      const publicClient = (await create({ isPublic: true })).client;
      assert.deepEqual(await service().rotateSecret(publicClient.id, SYSTEM_SOURCE), { ok: false, reason: 'PUBLIC_CLIENT' });
      assert.equal((await rowOf(publicClient.id)).secret_hash, null);
      assert.deepEqual(await service().rotateSecret('no-such-client', SYSTEM_SOURCE), { ok: false, reason: 'NOT_FOUND' });
      assert.deepEqual(await service().rotateSecret('x'.repeat(500), SYSTEM_SOURCE), { ok: false, reason: 'NOT_FOUND' });
    });

    it('gives the provider its metadata: the hash as client_secret, response types from the grants', async () => {
      const { client } = await create({ name: 'Web', postLogoutRedirectUris: ['https://app.example.com/bye'], idTokenSignedResponseAlg: 'RS256' });
      const row = await rowOf(client.id);
      assert.deepEqual(await service().providerMetadata(client.id), {
        client_id: client.id,
        client_name: 'Web',
        client_secret: row.secret_hash,
        token_endpoint_auth_method: 'client_secret_basic',
        redirect_uris: [WEB],
        post_logout_redirect_uris: ['https://app.example.com/bye'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        id_token_signed_response_alg: 'RS256',
      });

      const native = (await create({ name: 'Phone', isPublic: true, redirectUris: ['com.example.app:/cb'] })).client;
      assert.deepEqual(await service().providerMetadata(native.id), {
        client_id: native.id,
        client_name: 'Phone',
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        redirect_uris: ['com.example.app:/cb'],
        post_logout_redirect_uris: [],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        id_token_signed_response_alg: 'EdDSA',
      });

      const machine = (await create({ name: 'Batch', redirectUris: [], grantTypes: ['client_credentials'] })).client;
      const machineMetadata = await service().providerMetadata(machine.id);
      assert.deepEqual(machineMetadata?.response_types, []);
      assert.deepEqual(machineMetadata?.grant_types, ['client_credentials']);
      assert.equal(await service().providerMetadata('no-such-client'), undefined);
    });

    it('changes the name and redirect URIs under the same rules', async () => {
      const { client } = await create();
      const updated = await service().update(client.id, { name: 'Renamed', redirectUris: ['https://new.example.com/cb'] }, SYSTEM_SOURCE);
      assert.ok(updated.ok);
      assert.equal(updated.client.name, 'Renamed');
      assert.deepEqual((await service().show(client.id))!.redirectUris, ['https://new.example.com/cb']);
      const refused = await service().update(client.id, { redirectUris: ['http://new.example.com/cb'] }, SYSTEM_SOURCE);
      assert.deepEqual(refused.ok ? [] : 'problems' in refused ? refused.problems.map((p) => p.reason) : [refused.reason], ['HTTPS_REQUIRED']);
      const emptied = await service().update(client.id, { redirectUris: [] }, SYSTEM_SOURCE);
      assert.deepEqual(emptied.ok ? [] : 'problems' in emptied ? emptied.problems.map((p) => p.reason) : [], ['REDIRECT_URI_REQUIRED']);
      assert.deepEqual((await service().show(client.id))!.redirectUris, ['https://new.example.com/cb'], 'unchanged');
      assert.deepEqual(await service().update('no-such-client', { name: 'X' }, SYSTEM_SOURCE), { ok: false, reason: 'NOT_FOUND' });
    });

    it('deletes a client once', async () => {
      const { client } = await create();
      assert.equal(await service().delete(client.id, SYSTEM_SOURCE), true);
      assert.equal(await service().show(client.id), null);
      assert.equal(await service().providerMetadata(client.id), undefined);
      assert.equal(await service().delete(client.id, SYSTEM_SOURCE), false);
    });

    it('records its domain events with the client id and never a secret', async () => {
      const source = { actorUserId: null, ip: '203.0.113.9', userAgent: 'Test/1.0' };
      const created = await service().create({ name: 'Audited', redirectUris: [WEB] }, source);
      assert.ok(created.ok);
      const rotated = await service().rotateSecret(created.client.id, source);
      assert.ok(rotated.ok);
      await service().update(created.client.id, { name: 'Audited 2' }, source);
      await service().delete(created.client.id, source);
      const { events } = await t.services.audit.listEvents({ limit: 200 });
      const mine = events.filter((event) => event.details?.clientId === created.client.id);
      // Several may share a millisecond: compare the set.
      assert.deepEqual(mine.map((event) => event.type).sort(), ['oidc_client.created', 'oidc_client.deleted', 'oidc_client.secret_rotated', 'oidc_client.updated']);
      assert.ok(mine.every((event) => event.ip === '203.0.113.9'));
      const text = JSON.stringify(mine);
      for (const secret of [created.clientSecret!, rotated.clientSecret, hashClientSecret(created.clientSecret!), hashClientSecret(rotated.clientSecret)]) {
        assert.ok(!text.includes(secret), 'no secret or hash in the audit log');
      }
    });

    it('lists clients newest first', async () => {
      const first = (await create({ name: 'First' })).client;
      await new Promise((resolve) => setTimeout(resolve, 5));
      const second = (await create({ name: 'Second' })).client;
      const ids = (await service().list()).map((client) => client.id);
      assert.ok(ids.indexOf(second.id) < ids.indexOf(first.id));
    });
  });
}
