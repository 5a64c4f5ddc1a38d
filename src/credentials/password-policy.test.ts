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

/** "One user stalls password-strength checks for everyone": what is cheap to decide does not wait for the estimator. */
describe('one user cannot stall password-strength checks: checkPassword decides what is cheap before the estimator', () => {
  const identity = { email: 'alice.liddell@example.com', name: 'Alice Liddell' };
  const cheap = [
    ['alice.liddell@example.com', 'CONTAINS_IDENTITY'],
    ['Alice.Liddell', 'CONTAINS_IDENTITY'],
    ['ALICE LIDDELL', 'CONTAINS_IDENTITY'],
    ['Gatehouse', 'CONTAINS_IDENTITY'],
    ['zzzzzzzzzzzz', 'TOO_GUESSABLE'],
    ['😀'.repeat(100), 'TOO_GUESSABLE'],
  ] as const;
  /** An estimator that records what it is asked and answers "strong". */
  function recorder() {
    const asked: Array<{ password: string; caller: string | undefined }> = [];
    const estimator = {
      async estimate(password: string, _userInputs: readonly string[], caller?: string) {
        asked.push({ password, caller });
        return { score: 4, dictionaryNames: [], warning: null, suggestion: null, judgedLength: [...password].length };
      },
      isRunning: () => false,
    };
    return { asked, estimator };
  }

  it('refuses an identity word or one repeated character, and accepts anything at PASSWORD_MIN_SCORE=0, without a turn of the estimator', async () => {
    const { asked, estimator } = recorder();
    for (const [password, reason] of cheap) {
      assert.equal((await checkPassword(password, policy, identity, { estimator }))?.reason, reason, password.slice(0, 20));
    }
    assert.equal(await checkPassword('password1234', { ...policy, minScore: 0 }, {}, { estimator }), null);
    assert.deepEqual(asked, []);
    // While a password that needs judging is judged by it.
    assert.equal(await checkPassword('violet harbour lantern quietly', policy, identity, { estimator }), null);
    assert.equal(asked.length, 1);
  });

  it('refuses them as the estimate does: the real estimator scores each below the default minimum', async () => {
    const { strengthEstimator } = await import('./password-strength.ts');
    const words = ['gatehouse', 'gate house', 'auth', 'login', 'signin', 'admin', 'alice.liddell@example.com', 'alice.liddell', 'alice', 'liddell', 'example', 'alice liddell'];
    for (const [password] of cheap) {
      const estimate = await strengthEstimator.estimate(password.normalize('NFKC'), words);
      assert.ok(estimate.score < policy.minScore, `${password.slice(0, 20)}: score ${estimate.score}`);
    }
  });

  it('asks the estimator with the caller, so the caller takes turns with the others', async () => {
    const { asked, estimator } = recorder();
    assert.equal(await checkPassword('violet harbour lantern quietly', policy, identity, { estimator, caller: '203.0.113.7' }), null);
    assert.deepEqual(asked, [{ password: 'violet harbour lantern quietly', caller: '203.0.113.7' }]);
  });
});
