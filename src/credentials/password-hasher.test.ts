import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey } from 'node:crypto';
import { parseOptions } from '@node-rs/argon2';
import { createPasswordHasher } from './password-hasher.ts';
import { UnavailableError } from '../errors.ts';

const options = {
  argon2: { memoryKib: 19_456, iterations: 2, parallelism: 1 },
  maxConcurrentHashes: 2,
  maxQueuedHashes: 16,
  queueTimeoutMs: 5_000,
  dummySelectionKey: createSecretKey(Buffer.alloc(32, 7)),
};

describe('password hasher', () => {
  it('hashes with argon2id and the configured (OWASP) parameters, salted', async () => {
    const hasher = await createPasswordHasher(options);
    const first = await hasher.hash('correct horse battery staple');
    const second = await hasher.hash('correct horse battery staple');
    assert.match(first, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.notEqual(first, second);
    assert.equal(parseOptions(first).saltLen, 16);
    assert.equal(hasher.needsRehash(first), false);
  });

  it('verifies the right password only, and never throws on a malformed hash', async () => {
    const hasher = await createPasswordHasher(options);
    const stored = await hasher.hash('correct horse battery staple');
    assert.equal(await hasher.verify(stored, 'correct horse battery staple'), true);
    assert.equal(await hasher.verify(stored, 'correct horse battery stapler'), false);
    assert.equal(await hasher.verify('not-a-hash', 'x'), false);
    assert.equal(await hasher.verify('$argon2id$v=19$m=1,t=1,p=1$AAAA$AAAA', 'x'), false);
  });

  it('normalises passwords (NFKC) so composed and decomposed forms verify', async () => {
    const hasher = await createPasswordHasher(options);
    const stored = await hasher.hash('caf\u00e9 au lait, s\u2019il vous pla\u00eet');
    assert.equal(await hasher.verify(stored, 'cafe\u0301 au lait, s\u2019il vous plai\u0302t'), true);
  });

  it('flags hashes made with other parameters or algorithms for rehash', async () => {
    const hasher = await createPasswordHasher(options);
    const stronger = await createPasswordHasher({ ...options, argon2: { ...options.argon2, iterations: 3 } });
    const old = await hasher.hash('correct horse battery staple');
    assert.equal(stronger.needsRehash(old), true);
    assert.equal(hasher.needsRehash('$2b$10$abcdefghijklmnopqrstuv'), true);
    assert.equal(hasher.needsRehash(old.replace('argon2id', 'argon2i')), true);
  });

  it('turns a burst beyond capacity into UnavailableError', async () => {
    const hasher = await createPasswordHasher({ ...options, maxConcurrentHashes: 1, maxQueuedHashes: 0 });
    const results = await Promise.allSettled([hasher.hash('a long password 1'), hasher.hash('a long password 2')]);
    assert.equal(results[0]!.status, 'fulfilled');
    assert.equal(results[1]!.status, 'rejected');
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof UnavailableError);
  });

  describe('accounts whose hash was made with older ARGON2_* settings refuse no slower than unknown addresses', () => {
    const OLD = '$argon2id$v=19$m=8192,t=5,p=1';
    const addresses = Array.from({ length: 400 }, (_, i) => `someone${i}@example.com`);

    it('the dummy follows the mix of stored parameters, per address, the same every time and on every instance', async () => {
      const hasher = await createPasswordHasher(options);
      const current = '$argon2id$v=19$m=19456,t=2,p=1';
      assert.ok(addresses.every((a) => hasher.dummyParametersFor(a) === current), 'no stored hashes: the configured parameters');

      // Every stored hash is old: every unknown address must cost what those accounts cost.
      await hasher.useStoredParameters([{ encoded: OLD, count: 12 }]);
      assert.ok(addresses.every((a) => hasher.dummyParametersFor(a) === OLD));

      // A quarter old: about a quarter of the addresses get the old dummy, each always the same one.
      await hasher.useStoredParameters([{ encoded: OLD, count: 250 }, { encoded: current, count: 750 }]);
      const old = addresses.filter((a) => hasher.dummyParametersFor(a) === OLD);
      assert.ok(old.length > 60 && old.length < 140, `${old.length} of 400 addresses get the old parameters`);
      assert.deepEqual(addresses.filter((a) => hasher.dummyParametersFor(a) === OLD), old, 'stable per address');
      const twin = await createPasswordHasher(options);
      await twin.useStoredParameters([{ encoded: current, count: 750 }, { encoded: OLD, count: 250 }]);
      assert.deepEqual(addresses.filter((a) => twin.dummyParametersFor(a) === OLD), old, 'another instance (same secret) chooses alike');
    });

    it('verifies the dummy with those parameters, and ignores parameter sets it cannot or must not use', async () => {
      const hasher = await createPasswordHasher(options);
      await hasher.useStoredParameters([
        { encoded: OLD, count: 1 },
        { encoded: '$argon2id$v=19$m=99999999,t=2,p=1', count: 1000 },
        { encoded: '$2b$10', count: 1000 },
      ]);
      assert.ok(addresses.every((a) => hasher.dummyParametersFor(a) === OLD), 'only the usable set counts');
      await hasher.verifyDummy('any password', addresses[0]!);
    });
  });
});
