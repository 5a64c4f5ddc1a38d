/**
 * oidc-provider's storage adapter on every backend: the contract the provider relies on, as its
 * memory adapter keeps it (expiry on read, `consumed`, lookups by user code and uid, revocation by
 * grant across models), the housekeeping queries beside it, and one real Provider issuing a
 * client-credentials token through it. The migration is not in a module's list yet, so the suite
 * applies it itself beside every module's.
 */
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import type { Kysely } from 'kysely';
import Provider, { type Adapter, type AdapterFactory, type AdapterPayload } from 'oidc-provider';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { applyMigrations } from '../storage/migrations.ts';
import { collectMigrations } from '../module.ts';
import { MODULES, migrateToLatest } from '../modules.ts';
import { systemClock } from '../lib/clock.ts';
import * as oidcPayloads from './migrations/20261124-oidc-provider-payloads.ts';
import { createAdapterFactory, type ClientSource } from './oidc.adapter.ts';
import { deleteExpiredOidcPayloads, deleteOidcPayloadsByAccountId, findOidcPayload, listGrantsByAccount } from './oidc.store.ts';

const MIGRATION_NAME = '20261124-oidc-provider-payloads';
const START = Date.UTC(2026, 10, 24, 12, 0, 0);

const CLIENT = {
  client_id: 'c1',
  client_secret: 's'.repeat(32),
  redirect_uris: ['https://rp.example/cb'],
  grant_types: ['client_credentials'],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
};

/** A ClientSource knowing CLIENT only, recording the ids it was asked for. */
function staticClients(): ClientSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async find(clientId) {
      asked.push(clientId);
      return clientId === CLIENT.client_id ? { ...CLIENT } : undefined;
    },
  };
}

for (const backend of await backends()) {
  describe(`oidc-provider storage adapter (${backend.name})`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let factory: AdapterFactory;
    const clock = fakeClock(START);
    const clients = staticClients();
    /** One adapter per model, as the provider keeps them. */
    const adapters = new Map<string, Adapter>();
    const adapter = (model: string): Adapter => {
      let found = adapters.get(model);
      if (found === undefined) {
        found = factory(model);
        adapters.set(model, found);
      }
      return found;
    };

    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
      await applyMigrations(storage.db, { ...collectMigrations(MODULES), [MIGRATION_NAME]: oidcPayloads });
      factory = createAdapterFactory({ db: storage.db, clock, clients });
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('finds what was upserted, as it was given, and nothing for an unknown id or another model', async () => {
      const payload: AdapterPayload = { jti: 'at-1', kind: 'AccessToken', iat: 1, exp: 2, clientId: 'c1', accountId: 'u1', scope: 'openid', extra: { a: [1, 'b'] } };
      await adapter('AccessToken').upsert('at-1', payload, 3600);
      assert.deepEqual(await adapter('AccessToken').find('at-1'), payload);
      assert.equal(await adapter('AccessToken').find('nope'), undefined);
      assert.equal(await adapter('RefreshToken').find('at-1'), undefined, 'ids are per model');
    });

    it('answers undefined from the instant expiresIn has passed, before any purge; no expiresIn: never', async () => {
      await adapter('Interaction').upsert('i-1', { jti: 'i-1', kind: 'Interaction' }, 60);
      await adapter('Grant').upsert('g-forever', { jti: 'g-forever', kind: 'Grant' });
      clock.advance(59_999);
      assert.ok(await adapter('Interaction').find('i-1'));
      clock.advance(1);
      assert.equal(await adapter('Interaction').find('i-1'), undefined);
      assert.ok(await findOidcPayload(storage.db, 'Interaction', 'i-1', 0), 'the row is still there until housekeeping');
      clock.advance(10 * 365 * 86_400_000);
      assert.ok(await adapter('Grant').find('g-forever'));
    });

    it('adds the clock tolerance to every lifetime when given one', async () => {
      const tolerant = createAdapterFactory({ db: storage.db, clock, clients, clockToleranceSeconds: 5 })('AuthorizationCode');
      await tolerant.upsert('code-tol', { jti: 'code-tol' }, 10);
      clock.advance(14_999);
      assert.ok(await tolerant.find('code-tol'));
      clock.advance(1);
      assert.equal(await tolerant.find('code-tol'), undefined);
    });

    it('marks a consumed row with `consumed` in epoch seconds, keeps it findable, and an upsert makes it unused again', async () => {
      const codes = adapter('AuthorizationCode');
      await codes.upsert('code-1', { jti: 'code-1', kind: 'AuthorizationCode' }, 60);
      assert.equal((await codes.find('code-1'))?.consumed, undefined);
      await codes.consume('code-1');
      assert.deepEqual(await codes.find('code-1'), { jti: 'code-1', kind: 'AuthorizationCode', consumed: Math.floor(clock() / 1000) });
      await codes.consume('missing');
      await codes.upsert('code-1', { jti: 'code-1', kind: 'AuthorizationCode' }, 60);
      assert.equal((await codes.find('code-1'))?.consumed, undefined);
    });

    it('finds a device code by its user code and a session by its uid, live ones of that model only', async () => {
      await adapter('DeviceCode').upsert('dc-1', { jti: 'dc-1', kind: 'DeviceCode', userCode: 'ABCD-EFGH', grantId: 'g-dc' }, 600);
      await adapter('Session').upsert('sess-1', { jti: 'sess-1', kind: 'Session', uid: 'uid-1', accountId: 'u-sess' }, 600);
      await adapter('Session').upsert('sess-old', { jti: 'sess-old', kind: 'Session', uid: 'uid-2' }, 1);
      assert.equal((await adapter('DeviceCode').findByUserCode('ABCD-EFGH'))?.jti, 'dc-1');
      assert.equal(await adapter('DeviceCode').findByUserCode('ZZZZ-ZZZZ'), undefined);
      assert.equal(await adapter('Interaction').findByUserCode('ABCD-EFGH'), undefined);
      assert.equal((await adapter('Session').findByUid('uid-1'))?.jti, 'sess-1');
      assert.equal(await adapter('Interaction').findByUid('uid-1'), undefined);

      // A session renewed under a new id keeps its uid; the expired one must not be found.
      clock.advance(1_000);
      await adapter('Session').upsert('sess-new', { jti: 'sess-new', kind: 'Session', uid: 'uid-2' }, 600);
      assert.equal((await adapter('Session').findByUid('uid-2'))?.jti, 'sess-new');
      clock.advance(600_000);
      assert.equal(await adapter('DeviceCode').findByUserCode('ABCD-EFGH'), undefined, 'expired');
      assert.equal(await adapter('Session').findByUid('uid-1'), undefined, 'expired');
    });

    it('revokes a grant from any model adapter: its tokens of every model go, other grants and non-token rows stay', async () => {
      const tokens = [
        ['AccessToken', 'rv-at'],
        ['RefreshToken', 'rv-rt'],
        ['AuthorizationCode', 'rv-code'],
        ['BackchannelAuthenticationRequest', 'rv-ciba'],
      ] as const;
      for (const [model, id] of tokens) await adapter(model).upsert(id, { jti: id, grantId: 'g-rv' }, 600);
      await adapter('AccessToken').upsert('other-at', { jti: 'other-at', grantId: 'g-other' }, 600);
      await adapter('Grant').upsert('g-rv', { jti: 'g-rv', kind: 'Grant', accountId: 'u-rv' }, 600);
      await adapter('Interaction').upsert('rv-int', { jti: 'rv-int', grantId: 'g-rv' }, 600);

      await adapter('RefreshToken').revokeByGrantId('g-rv');

      for (const [model, id] of tokens) assert.equal(await adapter(model).find(id), undefined, `${model} revoked`);
      assert.ok(await adapter('AccessToken').find('other-at'), 'another grant');
      assert.ok(await adapter('Grant').find('g-rv'), 'the provider destroys the Grant itself');
      assert.ok(await adapter('Interaction').find('rv-int'), 'not indexed by grant, as in the memory adapter');
    });

    it('destroys one row', async () => {
      await adapter('ReplayDetection').upsert('rd-1', { jti: 'rd-1' }, 60);
      await adapter('ReplayDetection').destroy('rd-1');
      assert.equal(await adapter('ReplayDetection').find('rd-1'), undefined);
      await adapter('ReplayDetection').destroy('rd-1');
    });

    it("deletes every row of an account, whatever its model, and lists the account's live grants", async () => {
      await adapter('Session').upsert('acc-sess', { jti: 'acc-sess', uid: 'acc-uid', accountId: 'u-acc' }, 600);
      await adapter('Grant').upsert('acc-g1', { jti: 'acc-g1', accountId: 'u-acc', clientId: 'c1' }, 600);
      await adapter('Grant').upsert('acc-g2', { jti: 'acc-g2', accountId: 'u-acc', clientId: 'c2' }, 1);
      await adapter('AccessToken').upsert('acc-at', { jti: 'acc-at', accountId: 'u-acc', grantId: 'acc-g1' }, 600);
      await adapter('AccessToken').upsert('acc-other', { jti: 'acc-other', accountId: 'u-someone-else' }, 600);
      clock.advance(1_000);

      const grants = await listGrantsByAccount(storage.db, 'u-acc', clock());
      assert.deepEqual(grants.map((row) => [row.id, (JSON.parse(row.payload) as { clientId: string }).clientId]), [['acc-g1', 'c1']]);
      assert.equal((await listGrantsByAccount(storage.db, 'u-acc')).length, 2, 'without now, expired ones too');

      assert.equal(await deleteOidcPayloadsByAccountId(storage.db, 'u-acc'), 4);
      for (const [model, id] of [['Session', 'acc-sess'], ['Grant', 'acc-g1'], ['AccessToken', 'acc-at']] as const) {
        assert.equal(await adapter(model).find(id), undefined);
      }
      assert.ok(await adapter('AccessToken').find('acc-other'));
    });

    it('purges rows expired before now in bounded batches, never live ones or ones without an expiry', async () => {
      // Whatever earlier tests left expired goes first.
      while ((await deleteExpiredOidcPayloads(storage.db, clock(), 100)) > 0);
      for (let i = 0; i < 7; i += 1) await adapter('ReplayDetection').upsert(`purge-${i}`, { jti: `purge-${i}` }, 10);
      await adapter('ReplayDetection').upsert('purge-live', { jti: 'purge-live' }, 3600);
      await adapter('ReplayDetection').upsert('purge-never', { jti: 'purge-never' });
      clock.advance(11_000);

      assert.equal(await deleteExpiredOidcPayloads(storage.db, clock(), 5), 5, 'one batch at most');
      assert.equal(await deleteExpiredOidcPayloads(storage.db, clock(), 5), 2);
      assert.equal(await deleteExpiredOidcPayloads(storage.db, clock(), 5), 0);
      assert.equal(await findOidcPayload(storage.db, 'ReplayDetection', 'purge-0', 0), undefined, 'gone for good');
      assert.ok(await adapter('ReplayDetection').find('purge-live'));
      assert.ok(await adapter('ReplayDetection').find('purge-never'));
    });

    it('replaces a row upserted again: payload, lookups and expiry', async () => {
      const devices = adapter('DeviceCode');
      await devices.upsert('dc-re', { jti: 'dc-re', userCode: 'OLD-CODE', grantId: 'g-re-old' }, 10);
      await devices.upsert('dc-re', { jti: 'dc-re', userCode: 'NEW-CODE', grantId: 'g-re-new', inFlight: true }, 3600);
      assert.deepEqual(await devices.find('dc-re'), { jti: 'dc-re', userCode: 'NEW-CODE', grantId: 'g-re-new', inFlight: true });
      assert.equal(await devices.findByUserCode('OLD-CODE'), undefined);
      assert.equal((await devices.findByUserCode('NEW-CODE'))?.jti, 'dc-re');
      await devices.revokeByGrantId('g-re-old');
      assert.ok(await devices.find('dc-re'), 'no longer in the old grant');
      clock.advance(11_000);
      assert.ok(await devices.find('dc-re'), 'the new expiry holds');
    });

    it('survives concurrent upserts of one id: every one succeeds and one of them is what is found', async () => {
      const sessions = adapter('Session');
      const writes = Array.from({ length: 40 }, (_, i) => sessions.upsert('sess-race', { jti: 'sess-race', uid: 'uid-race', loginTs: i }, 600));
      await Promise.all(writes);
      const found = await sessions.find('sess-race');
      assert.ok(typeof found?.loginTs === 'number' && found.loginTs >= 0 && found.loginTs < 40);
      assert.equal((await sessions.findByUid('uid-race'))?.jti, 'sess-race');
    });

    it('reads clients from the ClientSource, never from the table, and refuses to write them', async () => {
      const clientAdapter = factory('Client');
      assert.deepEqual(await clientAdapter.find('c1'), CLIENT);
      assert.equal(await clientAdapter.find('c2'), undefined);
      assert.deepEqual(clients.asked.slice(-2), ['c1', 'c2']);
      await assert.rejects(clientAdapter.upsert('c3', { client_id: 'c3' }), /clients are managed by Gatehouse/);
      await assert.rejects(clientAdapter.destroy('c1'), /clients are managed by Gatehouse/);
      assert.equal(await findOidcPayload(storage.db, 'Client', 'c3', clock()), undefined);
    });

    it('stores a real Provider\'s client-credentials token, found again through the adapter', async () => {
      // RS256: the alg the provider signs ID tokens with by default, so client metadata needs no more.
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      const provider = new Provider('http://127.0.0.1', {
        adapter: createAdapterFactory({ db: storage.db, clock: systemClock, clients: staticClients() }),
        jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig' }] },
        cookies: { keys: ['k'.repeat(32)] },
        features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
        ttl: { ClientCredentials: 600 },
      });
      const server: Server = createServer(provider.callback());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const response = await fetch(`http://127.0.0.1:${port}/token`, {
          method: 'POST',
          headers: {
            authorization: `Basic ${Buffer.from(`${CLIENT.client_id}:${CLIENT.client_secret}`).toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams({ grant_type: 'client_credentials' }),
        });
        const body = (await response.json()) as { access_token?: string; token_type?: string; expires_in?: number };
        assert.equal(response.status, 200, JSON.stringify(body));
        assert.equal(body.token_type, 'Bearer');
        const token = body.access_token!;
        // An opaque token (the default format) is stored under its SHA-256, never as itself; a JWT
        // (three segments) is not stored.
        if (token.split('.').length !== 3) {
          assert.equal(await findOidcPayload(storage.db, 'ClientCredentials', token, Date.now()), undefined, 'not stored as itself');
          const row = await findOidcPayload(storage.db, 'ClientCredentials', `sha256:${createHash('sha256').update(token).digest('base64url')}`, Date.now());
          assert.ok(row, 'a ClientCredentials row for the opaque token');
          assert.ok(!row.payload.includes(token), 'nor in its payload');
          assert.ok(row.expires_at !== null && row.expires_at > Date.now() && row.expires_at <= Date.now() + 600_000, 'the configured ttl');
          const found = await provider.ClientCredentials.find(token);
          assert.equal(found?.clientId, CLIENT.client_id);
        }
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      }
    });

    it('migrates down and up again', async () => {
      // Migrations see an untyped database.
      const untyped = storage.db as unknown as Kysely<unknown>;
      await oidcPayloads.down(untyped);
      await assert.rejects(adapter('AccessToken').find('at-1'));
      await oidcPayloads.up(untyped);
      assert.equal(await adapter('AccessToken').find('at-1'), undefined);
    });
  });
}
