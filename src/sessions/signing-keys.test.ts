import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { compactDecrypt, createLocalJWKSet, jwtVerify } from 'jose';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest } from '../modules.ts';
import { addSigningKey, deriveKeyEncryptionKey, KEY_ACTIVATION_DELAY_MS, loadSigningKeys, rotateSigningKey } from './signing-keys.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { signAccessToken } from './access-token.ts';

const SECRET = 'signing-key-test-secret-0123456789abcdefghijklmnop';
const clock = () => Date.now();

for (const backend of await backends()) {
  describe(`signing keys on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('generates one Ed25519 and one RSA key on first start and reuses them afterwards', async () => {
      const first = await loadSigningKeys({ db: storage.db, authSecret: SECRET, clock, retentionMs: 60_000 });
      const second = await loadSigningKeys({ db: storage.db, authSecret: SECRET, clock, retentionMs: 60_000 });
      assert.equal(first.current().kid, second.current().kid);
      const rows = await storage.db.selectFrom('signing_keys').selectAll().execute();
      assert.deepEqual(rows.map((row) => row.algorithm).sort(), ['EdDSA', 'RS256']);
      const ed = first.publicJwks().find((jwk) => jwk.alg === 'EdDSA');
      assert.deepEqual({ kty: ed!.kty, crv: ed!.crv, use: ed!.use }, { kty: 'OKP', crv: 'Ed25519', use: 'sig' });
      assert.equal(ed!.kid, first.current().kid, 'our own tokens are signed with the Ed25519 key');
      const rsa = first.publicJwks().find((jwk) => jwk.alg === 'RS256');
      assert.equal(rsa!.kty, 'RSA');
      for (const jwk of first.publicJwks()) assert.equal(jwk.d, undefined, 'the public JWK has no private part');
      assert.deepEqual([...first.signingKids()].sort(), [ed!.kid, rsa!.kid].sort(), 'one signing key per algorithm');
      assert.deepEqual(first.privateJwks().slice(0, 2).map((jwk) => jwk.kid).sort(), [ed!.kid, rsa!.kid].sort(), 'signing keys first');
    });

    it('adds the RSA key on the first start after an upgrade that had only Ed25519 keys', async () => {
      await storage.db.deleteFrom('signing_keys').where('algorithm', '=', 'RS256').execute();
      const keys = await loadSigningKeys({ db: storage.db, authSecret: SECRET, clock, retentionMs: 60_000 });
      assert.deepEqual(keys.publicJwks().map((jwk) => jwk.alg).sort(), ['EdDSA', 'RS256']);
    });

    it('stores the private key only encrypted, bound to its kid, under a key derived from AUTH_SECRET', async () => {
      const row = await storage.db.selectFrom('signing_keys').selectAll().where('algorithm', '=', 'EdDSA').executeTakeFirst();
      assert.ok(!row!.private_jwk_encrypted.includes('"d"'));
      assert.equal(row!.private_jwk_encrypted.split('.').length, 5, 'compact JWE');
      const { plaintext, protectedHeader } = await compactDecrypt(row!.private_jwk_encrypted, deriveKeyEncryptionKey(SECRET));
      assert.equal(protectedHeader.kid, row!.kid);
      assert.equal(JSON.parse(new TextDecoder().decode(plaintext)).x, JSON.parse(row!.public_jwk).x);
      await assert.rejects(compactDecrypt(row!.private_jwk_encrypted, deriveKeyEncryptionKey(`${SECRET}-other`)));
    });

    it('refuses to start with another AUTH_SECRET rather than sign with an unknown key', async () => {
      await assert.rejects(
        loadSigningKeys({ db: storage.db, authSecret: `${SECRET}-rotated`, clock, retentionMs: 60_000 }),
        /AUTH_SECRET/,
      );
    });

    it('signs tokens that verify against the published keys only', async () => {
      const keys = await loadSigningKeys({ db: storage.db, authSecret: SECRET, clock, retentionMs: 60_000 });
      const { token, expiresAt } = await signAccessToken(
        { userId: 'u1', sessionId: 's1', roles: ['ADMIN'], amr: ['pwd'], authTime: Date.now() },
        { key: keys.current(), issuer: 'https://issuer.test', audience: 'aud', issuedAtMs: Date.now(), ttlSeconds: 60 },
      );
      const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: [...keys.publicJwks()] }), { issuer: 'https://issuer.test', audience: 'aud' });
      assert.equal(payload.exp! * 1000, expiresAt);
      const tampered = `${token.slice(0, -4)}AAAA`;
      await assert.rejects(jwtVerify(tampered, createLocalJWKSet({ keys: [...keys.publicJwks()] })));
    });

    it('reloads for an unknown kid at once after a periodic reload, and at most once per cooldown', async () => {
      const keys = await loadSigningKeys({ db: storage.db, authSecret: SECRET, clock, retentionMs: 60_000, reloadIntervalMs: 0, minReloadIntervalMs: 60_000 });
      await keys.reload(); // the periodic reload, just before another instance adds a key
      const added = await addSigningKey({ db: storage.db, authSecret: SECRET, clock });
      assert.equal(keys.verificationKey(added), undefined);
      await keys.reloadForUnknownKid();
      assert.ok(keys.verificationKey(added), 'the key of the unknown kid was loaded at once');
      const another = await addSigningKey({ db: storage.db, authSecret: SECRET, clock });
      await keys.reloadForUnknownKid();
      assert.equal(keys.verificationKey(another), undefined, 'the next unknown kid within the cooldown reads nothing');
      await keys.reload();
      assert.ok(keys.verificationKey(another), 'the next periodic reload finds it');
      // The other tests count the keys in storage.
      await storage.db.deleteFrom('signing_keys').where('kid', 'in', [added, another]).execute();
    });

    it('rotates in stages: the new key is published at once, signs after the activation delay, and the old one stays published while its tokens live', async () => {
      const time = fakeClock();
      const retentionMs = 15 * 60_000;
      const options = { db: storage.db, authSecret: SECRET, clock: time, retentionMs, reloadIntervalMs: 0 };
      const [a, b] = [await loadSigningKeys(options), await loadSigningKeys(options)];
      const oldKid = a.current().kid;
      const oldRsaKid = a.privateJwks().find((jwk) => jwk.alg === 'RS256' && a.signingKids().includes(jwk.kid!))!.kid!;
      const versionBefore = a.version();
      const { kid: newKid, activeFrom, kids } = await rotateSigningKey({ db: storage.db, authSecret: SECRET, clock: time });
      assert.equal(activeFrom, time() + KEY_ACTIVATION_DELAY_MS);
      await Promise.all([a.reload(), b.reload()]);
      assert.equal(a.current().kid, oldKid, 'still signing with the old key during the activation delay');
      assert.notEqual(a.version(), versionBefore, 'a new published key is a new version');
      assert.deepEqual(new Set(b.publicJwks().map((k) => k.kid)), new Set([oldKid, newKid, oldRsaKid, kids.RS256]), 'the new keys are published at once');
      assert.deepEqual([...a.signingKids()].sort(), [oldKid, oldRsaKid].sort(), 'the provider too signs with the old keys until activation');
      assert.deepEqual(a.privateJwks().slice(0, 2).map((jwk) => jwk.kid).sort(), [oldKid, oldRsaKid].sort(), 'and they come first');
      const byOld = await signAccessToken({ userId: 'u', sessionId: 's', roles: [], amr: ['pwd'], authTime: time() }, { key: a.current(), issuer: 'i', audience: 'a', issuedAtMs: time(), ttlSeconds: 900 });

      time.advance(KEY_ACTIVATION_DELAY_MS);
      await Promise.all([a.reload(), b.reload()]);
      assert.equal(a.current().kid, newKid, 'the new key signs now');
      assert.equal(b.current().kid, newKid, 'on every instance');
      assert.deepEqual(b.privateJwks().slice(0, 2).map((jwk) => jwk.kid).sort(), [newKid, kids.RS256].sort(), 'the new keys sign, and come first');
      const byNew = await signAccessToken({ userId: 'u', sessionId: 's', roles: [], amr: ['pwd'], authTime: time() }, { key: a.current(), issuer: 'i', audience: 'a', issuedAtMs: time(), ttlSeconds: 900 });
      for (const token of [byOld.token, byNew.token]) {
        await jwtVerify(token, createLocalJWKSet({ keys: [...b.publicJwks()] }), { issuer: 'i', audience: 'a', currentDate: new Date(time()) });
      }

      time.advance(retentionMs + 1_000);
      await b.reload();
      assert.deepEqual(b.publicJwks().map((k) => k.kid).filter((kid) => kid === oldKid || kid === newKid), [newKid], 'the old key is gone once its tokens have expired');
      a.stop();
      b.stop();
    });
  });
}
