import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';
import { SecretBoxError, openSecret, sealSecret } from './secret-box.ts';

const KEY = randomBytes(32);
const USER = 'Xq3v9T0aYb2cD4eF6gH8iJ';
const SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
const BOX_SHAPE = /^v1\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]*)\.([A-Za-z0-9_-]{22})$/;
/** The associated data as the format defines it, written out here rather than imported. */
const aad = (userId: string) => Buffer.from(`gatehouse mfa totp-secret v1\0${userId}`, 'utf8');

/** Replaces one base64url part of a box. */
function withPart(box: string, index: number, value: string): string {
  const parts = box.split('.');
  parts[index] = value;
  return parts.join('.');
}

/** Flips the low bit of the first byte of one part. */
function flipped(box: string, index: number): string {
  const bytes = Buffer.from(box.split('.')[index]!, 'base64url');
  bytes[0]! ^= 1;
  return withPart(box, index, bytes.toString('base64url'));
}

describe('sealSecret', () => {
  it('writes v1.<iv>.<ciphertext>.<tag> that node:crypto opens with the user-bound associated data', () => {
    const box = sealSecret(SECRET, KEY, USER);
    const [, iv, ciphertext, tag] = BOX_SHAPE.exec(box)!;
    const decipher = createDecipheriv('aes-256-gcm', KEY, Buffer.from(iv!, 'base64url'), { authTagLength: 16 });
    decipher.setAAD(aad(USER));
    decipher.setAuthTag(Buffer.from(tag!, 'base64url'));
    const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext!, 'base64url')), decipher.final()]);
    assert.equal(plaintext.toString('utf8'), SECRET);
  });

  it('does not contain the secret, and uses a fresh IV each time', () => {
    const boxes = Array.from({ length: 20 }, () => sealSecret(SECRET, KEY, USER));
    assert.equal(new Set(boxes.map((box) => box.split('.')[1])).size, 20);
    for (const box of boxes) {
      assert.ok(!box.includes(SECRET));
      assert.ok(!Buffer.from(box.split('.')[2]!, 'base64url').toString('latin1').includes(SECRET));
    }
  });

  it('refuses a key that is not 32 bytes, and an empty user id', () => {
    // The box's own check (Node would refuse a wrong AES-256 key too, with another message).
    const wrongSize = { name: 'RangeError', message: 'A secret box key must be 32 bytes' };
    assert.throws(() => sealSecret(SECRET, randomBytes(16), USER), wrongSize);
    assert.throws(() => sealSecret(SECRET, randomBytes(33), USER), wrongSize);
    assert.throws(() => sealSecret(SECRET, createSecretKey(randomBytes(16)), USER), wrongSize);
    assert.throws(() => openSecret('not a box', createSecretKey(randomBytes(24)), USER), wrongSize, 'the key is checked before the box is read');
    assert.throws(() => sealSecret(SECRET, KEY, ''), RangeError);
  });

  it('takes the key as a KeyObject too: the same key opens what the other form sealed', () => {
    const keyObject = createSecretKey(KEY);
    assert.equal(openSecret(sealSecret(SECRET, KEY, USER), keyObject, USER), SECRET);
    assert.equal(openSecret(sealSecret(SECRET, keyObject, USER), KEY, USER), SECRET);
    assert.throws(() => openSecret(sealSecret(SECRET, keyObject, USER), createSecretKey(randomBytes(32)), USER), SecretBoxError);
  });
});

describe('openSecret', () => {
  it('opens what sealSecret sealed, for the same key and user', () => {
    assert.equal(openSecret(sealSecret(SECRET, KEY, USER), KEY, USER), SECRET);
    assert.equal(openSecret(sealSecret('', KEY, USER), KEY, USER), '');
    assert.equal(openSecret(sealSecret('ünïcødé ✓', KEY, USER), KEY, USER), 'ünïcødé ✓');
  });

  it('opens a box made independently with node:crypto in the documented format', () => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', KEY, iv, { authTagLength: 16 });
    cipher.setAAD(aad(USER));
    const ciphertext = Buffer.concat([cipher.update(SECRET, 'utf8'), cipher.final()]);
    const box = ['v1', ...[iv, ciphertext, cipher.getAuthTag()].map((part) => part.toString('base64url'))].join('.');
    assert.equal(openSecret(box, KEY, USER), SECRET);
  });

  it("fails for a box copied to another user's row", () => {
    const box = sealSecret(SECRET, KEY, USER);
    assert.throws(() => openSecret(box, KEY, 'another-user-id'), SecretBoxError);
    assert.throws(() => openSecret(box, KEY, `${USER}x`), SecretBoxError);
  });

  it('fails under another key (AUTH_SECRET changed)', () => {
    assert.throws(() => openSecret(sealSecret(SECRET, KEY, USER), randomBytes(32), USER), SecretBoxError);
  });

  it('fails when any part was altered', () => {
    const box = sealSecret(SECRET, KEY, USER);
    for (const index of [1, 2, 3]) assert.throws(() => openSecret(flipped(box, index), KEY, USER), SecretBoxError, `part ${index}`);
  });

  it('fails for a truncated tag or a wrong IV length instead of checking fewer bits', () => {
    const box = sealSecret(SECRET, KEY, USER);
    const tag = Buffer.from(box.split('.')[3]!, 'base64url');
    const iv = Buffer.from(box.split('.')[1]!, 'base64url');
    assert.throws(() => openSecret(withPart(box, 3, tag.subarray(0, 12).toString('base64url')), KEY, USER), SecretBoxError);
    assert.throws(() => openSecret(withPart(box, 1, iv.subarray(0, 8).toString('base64url')), KEY, USER), SecretBoxError);
  });

  it('fails for malformed boxes and unknown versions, without echoing them', () => {
    const box = sealSecret(SECRET, KEY, USER);
    const malformed = [
      '', 'v1', box.replace(/^v1/, 'v2'), box.replace(/^v1/, 'V1'), `${box}.`, box.split('.').slice(0, 3).join('.'),
      withPart(box, 2, `${box.split('.')[2]}!`), withPart(box, 1, `${box.split('.')[1]}=`), box.replace(/\./g, ':'),
    ];
    for (const input of malformed) {
      assert.throws(() => openSecret(input, KEY, USER), (error: unknown) => {
        assert.ok(error instanceof SecretBoxError, JSON.stringify(input));
        assert.ok(!error.message.includes(box.split('.')[2]!));
        return true;
      });
    }
  });

  it('refuses a key that is not 32 bytes before reading the box', () => {
    assert.throws(() => openSecret(sealSecret(SECRET, KEY, USER), KEY.subarray(0, 31), USER), { name: 'RangeError', message: 'A secret box key must be 32 bytes' });
    assert.throws(() => openSecret('v1.not-a-box', KEY.subarray(0, 31), USER), { name: 'RangeError', message: 'A secret box key must be 32 bytes' });
  });
});
