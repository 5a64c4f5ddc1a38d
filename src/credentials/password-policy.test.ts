import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkPassword } from './password-policy.ts';

const policy = { minLength: 12, maxLength: 64 };

describe('checkPassword', () => {
  const cases: Array<[string, string | null, { email?: string; name?: string }?]> = [
    ['a perfectly fine passphrase', null],
    ['short', 'TOO_SHORT'],
    ['elevenchars', 'TOO_SHORT'],
    ['x'.repeat(65), 'TOO_LONG'],
    ['password1234', 'TOO_COMMON'],
    ['PassWord1234', 'TOO_COMMON'],
    ['aaaaaaaaaaaaaaaa', 'TOO_COMMON'],
    ['abababababababab', 'TOO_COMMON'],
    ['alice.liddell', 'CONTAINS_IDENTITY', { email: 'alice.liddell@example.com' }],
    ['alice.liddell@example.com', 'CONTAINS_IDENTITY', { email: 'alice.liddell@example.com' }],
    ['Bartholomew Q', 'CONTAINS_IDENTITY', { name: 'bartholomew q' }],
    // Length is counted in characters, not bytes or UTF-16 units.
    ['🔑🔑🔐🗝️🔒🔓🔏🔑🔐🗝️', 'TOO_SHORT'],
    ['pässwörd-ünïcode', null],
  ];
  for (const [password, expected, identity] of cases) {
    it(`${expected ?? 'accepts'}: ${JSON.stringify(password.slice(0, 30))}`, () => {
      assert.equal(checkPassword(password, policy, identity)?.reason ?? null, expected);
    });
  }

  it('gives a reason a person can act on', () => {
    assert.equal(checkPassword('short', policy)?.message, 'must be at least 12 characters');
  });
});
