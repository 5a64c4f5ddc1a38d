import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomId } from './random.ts';

describe('randomId', () => {
  it('is 22 base64url characters and never starts with "-" (a command line would read it as an option)', () => {
    // 1 in 64 draws starts with "-": 20 000 draws would all but surely show one.
    const ids = Array.from({ length: 20_000 }, () => randomId());
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    assert.equal(new Set(ids).size, ids.length);
  });
});
