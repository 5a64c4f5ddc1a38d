import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { URI } from 'otpauth';
import { acceptCode, createTotpSecret, totpUrl, verifyCode } from './totp.ts';
import { base32Decode, hotp } from '../../test/helpers/totp.ts';

// RFC 6238 Appendix B: the SHA-1 key is the 20 ASCII bytes "12345678901234567890".
const RFC_KEY = Buffer.from('12345678901234567890', 'ascii');
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'; // base32 of RFC_KEY
// Appendix B's table (time in seconds -> 8-digit TOTP); a 6-digit code is its last six digits.
const RFC_VECTORS: Array<[seconds: number, totp8: string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];
const STEP_MS = 30_000;
const NOW = 1_750_000_000_000;
const NOW_STEP = Math.floor(NOW / STEP_MS);

describe('the test reference HOTP', () => {
  it('reproduces RFC 6238 Appendix B (SHA-1) at 8 digits', () => {
    for (const [seconds, expected] of RFC_VECTORS) assert.equal(hotp(RFC_KEY, Math.floor(seconds / 30), 8), expected);
  });

  it('decodes the RFC secret from base32', () => {
    assert.deepEqual(base32Decode(RFC_SECRET), RFC_KEY);
  });
});

describe('createTotpSecret', () => {
  it('makes 160-bit base32 secrets', () => {
    const secret = createTotpSecret();
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.equal(base32Decode(secret).length, 20);
  });

  it('makes a different secret each time', () => {
    const secrets = new Set(Array.from({ length: 50 }, () => createTotpSecret()));
    assert.equal(secrets.size, 50);
  });

  it('makes secrets that verify codes computed from their bytes', () => {
    const secret = createTotpSecret();
    assert.equal(verifyCode({ secret, code: hotp(base32Decode(secret), NOW_STEP), now: NOW }), NOW_STEP);
  });
});

describe('totpUrl', () => {
  it('builds a key URI with the issuer, the e-mail and the fixed parameters', () => {
    const url = new URL(totpUrl({ secret: RFC_SECRET, issuer: 'Gatehouse', email: 'alice@example.com' }));
    assert.equal(url.protocol, 'otpauth:');
    assert.equal(url.host, 'totp');
    assert.equal(decodeURIComponent(url.pathname), '/Gatehouse:alice@example.com');
    assert.equal(url.searchParams.get('issuer'), 'Gatehouse');
    assert.equal(url.searchParams.get('secret'), RFC_SECRET);
    assert.equal(url.searchParams.get('algorithm'), 'SHA1');
    assert.equal(url.searchParams.get('digits'), '6');
    assert.equal(url.searchParams.get('period'), '30');
  });

  it('percent-encodes labels, so an issuer or address cannot add parameters', () => {
    const issuer = 'Acme & Co / Sign-in?';
    const email = 'bob+tag@example.com';
    const url = totpUrl({ secret: RFC_SECRET, issuer, email });
    const params = new URL(url).searchParams;
    assert.equal(params.get('issuer'), issuer);
    assert.deepEqual([...params.keys()].sort(), ['algorithm', 'digits', 'issuer', 'period', 'secret']);
    const parsed = URI.parse(url);
    assert.equal(parsed.issuer, issuer);
    assert.equal(parsed.label, email);
  });

  it('refuses an empty issuer, a colon in either label part and a secret not of our shape', () => {
    assert.throws(() => totpUrl({ secret: RFC_SECRET, issuer: '', email: 'a@example.com' }), RangeError);
    assert.throws(() => totpUrl({ secret: RFC_SECRET, issuer: 'Acme: Sign-in', email: 'a@example.com' }), RangeError);
    assert.throws(() => totpUrl({ secret: RFC_SECRET, issuer: 'Acme', email: '"a:b"@example.com' }), RangeError);
    assert.throws(() => totpUrl({ secret: 'GEZDGNBV', issuer: 'Gatehouse', email: 'a@example.com' }), RangeError);
  });
});

describe('verifyCode', () => {
  it('accepts the RFC 6238 vectors and returns their time step', () => {
    for (const [seconds, totp8] of RFC_VECTORS) {
      const step = Math.floor(seconds / 30);
      assert.equal(verifyCode({ secret: RFC_SECRET, code: totp8.slice(-6), now: seconds * 1000 }), step, `${seconds}`);
    }
  });

  it('accepts the codes of one step before and one after, and no further', () => {
    const code = (offset: number) => hotp(RFC_KEY, NOW_STEP + offset);
    assert.equal(verifyCode({ secret: RFC_SECRET, code: code(-1), now: NOW }), NOW_STEP - 1);
    assert.equal(verifyCode({ secret: RFC_SECRET, code: code(1), now: NOW }), NOW_STEP + 1);
    assert.equal(verifyCode({ secret: RFC_SECRET, code: code(-2), now: NOW }), null);
    assert.equal(verifyCode({ secret: RFC_SECRET, code: code(2), now: NOW }), null);
  });

  it('moves to the next step exactly on the 30-second boundary', () => {
    const boundary = (NOW_STEP + 1) * STEP_MS;
    const older = hotp(RFC_KEY, NOW_STEP - 1);
    assert.equal(verifyCode({ secret: RFC_SECRET, code: older, now: boundary - 1 }), NOW_STEP - 1);
    assert.equal(verifyCode({ secret: RFC_SECRET, code: older, now: boundary }), null);
  });

  it('refuses a wrong code and a code of another secret', () => {
    const right = hotp(RFC_KEY, NOW_STEP);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    assert.equal(verifyCode({ secret: RFC_SECRET, code: wrong, now: NOW }), null);
    assert.equal(verifyCode({ secret: createTotpSecret(), code: right, now: NOW }), null);
  });

  it('allows spaces in the code', () => {
    const code = hotp(RFC_KEY, NOW_STEP);
    for (const typed of [`${code.slice(0, 3)} ${code.slice(3)}`, ` ${code} `, `${code}\n`]) {
      assert.equal(verifyCode({ secret: RFC_SECRET, code: typed, now: NOW }), NOW_STEP, JSON.stringify(typed));
    }
  });

  it('refuses anything but six ASCII digits, before the secret is even read', () => {
    // A secret the library would refuse: a malformed code must come back null without reaching it.
    const unreadable = 'not a secret';
    const code = hotp(RFC_KEY, NOW_STEP);
    const malformed: unknown[] = [
      code.slice(1), `${code}0`, '', '      ', `${code.slice(0, 3)}-${code.slice(3)}`, `+${code.slice(1)}`,
      'abcdef', code.replace(/\d/g, (d) => String.fromCharCode(0xff10 + Number(d))), // full-width digits
      code.replace(/\d/g, (d) => String.fromCharCode(0x0660 + Number(d))), // Arabic-Indic digits
      `${' '.repeat(40)}${code}`, Number(code), null, undefined, [code],
    ];
    for (const input of malformed) {
      assert.equal(verifyCode({ secret: unreadable, code: input, now: NOW }), null, JSON.stringify(input));
    }
  });

  it('throws on a stored secret not of our shape, so a broken row never checks weakly', () => {
    const code = hotp(RFC_KEY, NOW_STEP);
    for (const secret of ['', 'GEZDGNBVGY3TQOJQ', `${RFC_SECRET}====`, RFC_SECRET.toLowerCase()]) {
      assert.throws(() => verifyCode({ secret, code, now: NOW }), RangeError, secret);
    }
  });

  it('throws on a time that is not epoch milliseconds', () => {
    const code = hotp(RFC_KEY, NOW_STEP);
    for (const now of [Number.NaN, Number.POSITIVE_INFINITY, -1]) {
      assert.throws(() => verifyCode({ secret: RFC_SECRET, code, now }), RangeError, String(now));
    }
  });
});

describe('acceptCode', () => {
  const secret = RFC_SECRET;
  const code = (step: number) => hotp(RFC_KEY, step);

  it('accepts a first code and returns its step', () => {
    assert.deepEqual(acceptCode({ secret, code: code(NOW_STEP), now: NOW, lastUsedStep: null }), { step: NOW_STEP });
  });

  it('refuses the same code again (its step is the last used one)', () => {
    assert.equal(acceptCode({ secret, code: code(NOW_STEP), now: NOW, lastUsedStep: NOW_STEP }), null);
    assert.equal(acceptCode({ secret, code: code(NOW_STEP), now: NOW + 20_000, lastUsedStep: NOW_STEP }), null);
  });

  it('refuses an older code once a later one was used', () => {
    assert.equal(acceptCode({ secret, code: code(NOW_STEP - 1), now: NOW, lastUsedStep: NOW_STEP }), null);
  });

  it('accepts the next code after the last used one, in the window', () => {
    assert.deepEqual(acceptCode({ secret, code: code(NOW_STEP + 1), now: NOW, lastUsedStep: NOW_STEP }), {
      step: NOW_STEP + 1,
    });
    assert.deepEqual(acceptCode({ secret, code: code(NOW_STEP), now: NOW, lastUsedStep: NOW_STEP - 1 }), {
      step: NOW_STEP,
    });
  });

  it('still refuses a wrong code when nothing was used', () => {
    assert.equal(acceptCode({ secret, code: code(NOW_STEP + 5), now: NOW, lastUsedStep: null }), null);
  });

  it('does not let a used step hide a fresh step with the same code', () => {
    // Found by search: for the RFC key, steps 56188870 and 56188871 both give 617002.
    const used = 56188870;
    assert.equal(code(used), '617002');
    assert.equal(code(used + 1), '617002');
    const now = used * STEP_MS + 10_000;
    assert.deepEqual(acceptCode({ secret, code: '617002', now, lastUsedStep: null }), { step: used });
    assert.deepEqual(acceptCode({ secret, code: '617002', now, lastUsedStep: used }), { step: used + 1 });
    assert.equal(acceptCode({ secret, code: '617002', now, lastUsedStep: used + 1 }), null);
  });
});
