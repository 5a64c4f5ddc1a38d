/**
 * Every foreign hash kind verifies the password its library hashed, refuses a wrong one, and is
 * refused (at import and at verification) beyond its work bounds; through the password hasher it
 * runs in a hashing slot and asks for a rehash.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { checkImportedHash, FOREIGN_HASH_SCHEMES } from './hash-schemes.ts';
import { everyKind, FIREBASE_SAMPLE, firebasePhc } from './test-fixtures.ts';
import { createPasswordHasher } from '../credentials/password-hasher.ts';

const PASSWORD = 'correct horse battery staple é';

async function verifyForeign(hash: string, password: string): Promise<boolean> {
  const scheme = FOREIGN_HASH_SCHEMES.find((candidate) => candidate.recognises(hash));
  assert.ok(scheme, `a scheme recognises ${hash.slice(0, 16)}`);
  return scheme.verify(hash, password);
}

describe('foreign password hashes', async () => {
  const hashes = await everyKind(PASSWORD);

  for (const [kind, hash] of Object.entries(hashes)) {
    it(`${kind}: the right password verifies, a wrong one does not, the import accepts it`, async () => {
      assert.deepEqual(checkImportedHash(hash), { ok: true, kind });
      if (kind !== 'argon2id') {
        assert.equal(await verifyForeign(hash, PASSWORD), true);
        assert.equal(await verifyForeign(hash, `${PASSWORD}x`), false);
      }
    });
  }

  it('Firebase: the sample user of firebase/scrypt\'s README verifies with its project parameters', async () => {
    const hash = firebasePhc(FIREBASE_SAMPLE.hash, FIREBASE_SAMPLE.salt);
    assert.equal(await verifyForeign(hash, FIREBASE_SAMPLE.password), true);
    assert.equal(await verifyForeign(hash, 'user2password'), false);
  });

  it('refuses work beyond the bounds, at import and at verification, without doing it', async () => {
    const salt = randomBytes(16).toString('base64');
    const hostile = [
      `$pbkdf2-sha256$i=1000000000$${salt}$${salt}`,
      `$scrypt$ln=30,r=8,p=1$${salt}$${salt}`,
      `$scrypt$ln=14,r=8,p=64$${salt}$${salt}`,
      `$argon2id$v=19$m=4194304,t=3,p=1$${salt}$${salt}`,
      `$argon2i$v=19$m=65536,t=1000,p=1$${salt}$${salt}`,
      `$firebase-scrypt$ln=25,r=8$Bw$${salt}$${salt}$${salt}`,
      (await bcrypt.hash('x', 4)).replace('$04$', '$31$'),
    ];
    for (const hash of hostile) {
      assert.deepEqual(checkImportedHash(hash), { ok: false, reason: 'HASH_COST_TOO_HIGH' }, hash.slice(0, 24));
      const started = performance.now();
      const scheme = FOREIGN_HASH_SCHEMES.find((candidate) => candidate.recognises(hash));
      if (scheme !== undefined) assert.equal(await scheme.verify(hash, 'x'), false);
      assert.ok(performance.now() - started < 500, 'no work was done');
    }
  });

  it('refuses malformed hashes', () => {
    for (const hash of ['plain', '$2b$10$short', '$pbkdf2-md5$i=1$AA$AA', '$sha256$s=before$AAAA$AAAA', '$scrypt$ln=14,r=8,p=1$$', 'x'.repeat(5000)]) {
      assert.deepEqual(checkImportedHash(hash), { ok: false, reason: 'MALFORMED_HASH' }, hash.slice(0, 24));
    }
  });

  it('through the password hasher: verified in a hashing slot, and flagged for an argon2id rehash', async () => {
    const hasher = await createPasswordHasher({
      argon2: { memoryKib: 4096, iterations: 1, parallelism: 1 },
      dummySelectionKey: createSecretKey(randomBytes(32)),
      maxConcurrentHashes: 2,
      maxQueuedHashes: 10,
      queueTimeoutMs: 5_000,
      schemes: FOREIGN_HASH_SCHEMES,
    });
    const before = hasher.stats().started;
    assert.equal(await hasher.verify(hashes['bcrypt']!, PASSWORD), true);
    assert.equal(await hasher.verify(hashes['pbkdf2-sha256']!, 'wrong'), false);
    assert.equal(hasher.stats().started, before + 2);
    assert.equal(hasher.needsRehash(hashes['bcrypt']!), true);
    assert.equal(hasher.needsRehash(await hasher.hash(PASSWORD)), false);
  });
});
