import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkPassword } from './password-policy.ts';

const policy = { minLength: 8, maxLength: 128, minScore: 3 };

describe('checkPassword', () => {
  const cases: Array<[string, string | null, { email?: string; name?: string }?]> = [
    ['a perfectly fine passphrase', null],
    ['correct horse battery staple', null],
    ['pässwörd-ünïcode-wälder', null],
    ['short', 'TOO_SHORT'],
    ['x'.repeat(129), 'TOO_LONG'],
    ['password1234', 'TOO_COMMON'],
    ['PassWord1234', 'TOO_COMMON'],
    ['qwertyuiop123', 'TOO_COMMON'],
    ['aaaaaaaaaaaaaaaa', 'TOO_GUESSABLE'],
    ['abcdefgh12345678', 'TOO_COMMON'],
    ['alice.liddell', 'CONTAINS_IDENTITY', { email: 'alice.liddell@example.com' }],
    ['alice.liddell@example.com', 'CONTAINS_IDENTITY', { email: 'alice.liddell@example.com' }],
    ['Bartholomew Quincy', 'CONTAINS_IDENTITY', { name: 'Bartholomew Quincy' }],
    ['gatehouse2026!', 'CONTAINS_IDENTITY'],
    // Counted in code points after NFKC: seven characters, however many bytes.
    ['ŝŷĝŧĥĵķ', 'TOO_SHORT'],
    ['ﬀﬀﬀﬀ', 'TOO_GUESSABLE'], // NFKC: "ffffffff", eight characters, then too guessable
  ];
  for (const [password, expected, identity] of cases) {
    it(`${expected ?? 'accepts'}: ${JSON.stringify(password.slice(0, 30))}`, async () => {
      assert.equal((await checkPassword(password, policy, identity))?.reason ?? null, expected);
    });
  }

  // Its cost is the worker's concern (password-strength.test.ts: the event loop stays free).
  it('accepts a long passphrase of exactly 128 characters by default', async () => {
    const long = 'the quick brown fox jumps over the lazy dog while seven wizards quietly box '.repeat(2).slice(0, 128);
    assert.equal([...long].length, 128);
    assert.equal(await checkPassword(long, policy), null);
  });

  it('gives a reason a person can act on', async () => {
    assert.equal((await checkPassword('short', policy))?.message, 'must be at least 8 characters');
    assert.match((await checkPassword('password1234', policy))!.message, /common/);
    assert.match((await checkPassword('aaaaaaaaaaaaaaaa', policy))!.message, /guess/);
  });

  it('honours a higher minimum length (15, the SP 800-63B-4 figure for password-only use)', async () => {
    assert.equal((await checkPassword('violet harbour', { ...policy, minLength: 15 }))?.reason, 'TOO_SHORT');
  });
});
