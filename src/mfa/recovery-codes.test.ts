import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { RECOVERY_CODE_COUNT, generateRecoveryCodes, hashRecoveryCode, normalise } from './recovery-codes.ts';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
const CODE_SHAPE = /^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$/;
const KEY = Buffer.alloc(32, 7);

/** A random source that hands out the given bytes in order. */
function scripted(bytes: number[]): (size: number) => Uint8Array {
  let next = 0;
  return (size) => Uint8Array.from(bytes.slice(next, (next += size)));
}

describe('generateRecoveryCodes', () => {
  it('makes ten different codes of the form xxxxx-xxxxx', () => {
    const codes = generateRecoveryCodes();
    assert.equal(codes.length, 10);
    assert.equal(RECOVERY_CODE_COUNT, 10);
    assert.equal(new Set(codes).size, 10);
    for (const code of codes) assert.match(code, CODE_SHAPE);
  });

  it('turns each random byte into one character by its low five bits', () => {
    // Arbitrary fixed bytes, high bits included: the bytes of four SHA-256 digests.
    const bytes = [0, 1, 2, 3].flatMap((i) => [...createHash('sha256').update(String(i)).digest()]).slice(0, 100);
    const codes = generateRecoveryCodes(scripted(bytes));
    const expected = Array.from({ length: 10 }, (_, c) => {
      const chars = bytes.slice(c * 10, c * 10 + 10).map((byte) => CROCKFORD[byte % 32]).join('');
      return `${chars.slice(0, 5)}-${chars.slice(5)}`;
    });
    assert.deepEqual(codes, expected);
  });

  it('asks the random source for 10 bytes a code, 50 bits of entropy', () => {
    const sizes: number[] = [];
    generateRecoveryCodes((size) => {
      sizes.push(size);
      return randomBytes(size);
    });
    assert.deepEqual(sizes, Array(10).fill(10));
  });

  it('draws again when a set would hold the same code twice', () => {
    const first = Array.from({ length: 10 }, (_, i) => i);
    const bytes = [...first, ...first, ...Array.from({ length: 90 }, (_, i) => i + 10)];
    const codes = generateRecoveryCodes(scripted(bytes));
    assert.equal(new Set(codes).size, 10);
    assert.equal(codes[0], '01234-56789');
  });

  it('refuses a random source that returns too few bytes', () => {
    assert.throws(() => generateRecoveryCodes(() => new Uint8Array(9)), RangeError);
  });

  it('uses every symbol in every position (node:crypto, 1,000 sets)', () => {
    const seen = Array.from({ length: 10 }, () => new Set<string>());
    for (let i = 0; i < 1_000; i++) {
      for (const code of generateRecoveryCodes()) [...code.replace('-', '')].forEach((char, at) => seen[at]!.add(char));
    }
    // 10,000 draws per position: a missing symbol has a chance of about 32 x (31/32)^10000, i.e. none.
    for (const symbols of seen) assert.equal(symbols.size, 32);
  });
});

describe('normalise', () => {
  it('accepts the code as shown and as people type it', () => {
    const typings = [
      'abcde-fghjk', 'ABCDE-FGHJK', 'abcdefghjk', 'abcde fghjk', ' AbCdE  -  fGhJk\t', 'a-b-c-d-e-f-g-h-j-k',
      'abcde\u2013fghjk', // an en dash, as word processors turn a hyphen
    ];
    for (const typed of typings) assert.equal(normalise(typed), 'abcde-fghjk', JSON.stringify(typed));
  });

  it('reads o as 0 and i or l as 1', () => {
    assert.equal(normalise('OIL23-45678'), '01123-45678');
  });

  it('refuses what cannot be a recovery code', () => {
    const refused: unknown[] = [
      '', 'abcde-fghj', 'abcde-fghjkm', 'abcde-fghju', 'abcde_fghjk', 'abcde.fghjk', 'ａbcde-fghjk',
      `${' '.repeat(60)}abcde-fghjk`, 12345, null, undefined,
    ];
    for (const input of refused) assert.equal(normalise(input), null, JSON.stringify(input));
  });

  it('gives back every generated code unchanged', () => {
    for (const code of generateRecoveryCodes()) assert.equal(normalise(code), code);
  });
});

describe('hashRecoveryCode', () => {
  it('is HMAC-SHA256 of the canonical form, base64url', () => {
    const expected = createHmac('sha256', KEY).update('abcde-fghjk').digest('base64url');
    assert.equal(hashRecoveryCode('abcde-fghjk', KEY), expected);
    assert.match(expected, /^[A-Za-z0-9_-]{43}$/);
  });

  it('gives one hash for every way of typing a code', () => {
    const expected = hashRecoveryCode('0l1o2-34567', KEY);
    assert.equal(hashRecoveryCode('01102-34567', KEY), expected);
    assert.equal(hashRecoveryCode(' 011 02 345 67 ', KEY), expected);
  });

  it('differs between codes and between keys', () => {
    assert.notEqual(hashRecoveryCode('abcde-fghjk', KEY), hashRecoveryCode('abcde-fghjm', KEY));
    assert.notEqual(hashRecoveryCode('abcde-fghjk', KEY), hashRecoveryCode('abcde-fghjk', Buffer.alloc(32, 8)));
  });

  it('refuses a short key and input that is not a code', () => {
    assert.throws(() => hashRecoveryCode('abcde-fghjk', Buffer.alloc(31)), RangeError);
    assert.throws(() => hashRecoveryCode('not a code', KEY), RangeError);
  });
});
