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

  it('an HMAC key is the same key: MACs made before (refresh tokens, sign-in codes) still verify', () => {
    const bytes = deriveKey(SECRET, 'gatehouse refresh-token mac v1');
    const key = deriveSecretKey(SECRET, 'gatehouse refresh-token mac v1');
    assert.deepEqual(key.export(), bytes);
    const message = 'AAAAAAAAAAAAAAAAAAAAAA.seed.3';
    assert.equal(createHmac('sha256', key).update(message).digest('base64url'), createHmac('sha256', bytes).update(message).digest('base64url'));
  });
});
