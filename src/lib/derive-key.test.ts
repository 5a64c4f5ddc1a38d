import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { deriveSecretKey, deriveKey } from './derive-key.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';

describe('derived keys', () => {
  it('gives each purpose its own 32-byte key', () => {
    const one = deriveKey(SECRET, 'one');
    assert.equal(one.length, 32);
    assert.deepEqual(deriveKey(SECRET, 'one'), one);
    assert.notDeepEqual(deriveKey(SECRET, 'two'), one);
    assert.notDeepEqual(deriveKey(`${SECRET}!`, 'one'), one);
  });

  it('derives what it always derived: a change here would void every key, token and box made before', () => {
    // Known answers, made with HKDF-SHA256 (salt 'gatehouse', info the purpose) when the keys were first derived.
    assert.equal(deriveKey(SECRET, 'one').toString('hex'), '3a1ec98c31f95949cad4b819d6a83c275cf79712460f2169c3339065d18b904a');
    const refreshKey = deriveSecretKey(SECRET, 'gatehouse refresh-token mac v1');
    assert.equal(createHmac('sha256', refreshKey).update('AAAAAAAAAAAAAAAAAAAAAA.seed.3').digest('base64url'), 'zxh_nkqC0-Q2v-R7KNkGc3FeuzytZRM5jK29rUX-xuA');
  });

  it('an HMAC key is the same key: MACs made before (refresh tokens, sign-in codes) still verify', () => {
    const bytes = deriveKey(SECRET, 'gatehouse refresh-token mac v1');
    const key = deriveSecretKey(SECRET, 'gatehouse refresh-token mac v1');
    assert.deepEqual(key.export(), bytes);
    const message = 'AAAAAAAAAAAAAAAAAAAAAA.seed.3';
    assert.equal(createHmac('sha256', key).update(message).digest('base64url'), createHmac('sha256', bytes).update(message).digest('base64url'));
  });
});
