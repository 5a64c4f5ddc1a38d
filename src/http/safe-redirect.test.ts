import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { toSafeLocalPath } from './safe-redirect.ts';

const ORIGIN = 'https://auth.example.com';

describe('toSafeLocalPath', () => {
  const kept: Array<[string, string]> = [
    ['/dashboard', '/dashboard'],
    ['/dashboard?tab=sessions#top', '/dashboard?tab=sessions#top'],
    ['/a/../dashboard', '/dashboard'],
    ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
  ];
  for (const [input, expected] of kept) {
    it(`keeps ${input}`, () => assert.equal(toSafeLocalPath(input, ORIGIN), expected));
  }

  const refused = [
    '',
    'dashboard',
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    'https://evil.example/',
    'javascript:alert(1)',
    ' /dashboard',
    '/dash\nboard',
    '/\tevil',
    // Regression (review): dot segments collapsing into a protocol-relative URL.
    '/.//evil.example',
    '/..//evil.example',
    '/a/..//evil.example',
    '/%2e//evil.example',
    '/x/..\\/evil.example',
    `/${'a'.repeat(3000)}`,
  ];
  for (const input of refused) {
    it(`refuses ${JSON.stringify(input.slice(0, 40))}`, () => assert.equal(toSafeLocalPath(input, ORIGIN, '/fallback'), '/fallback'));
  }

  it('refuses values that are not strings', () => {
    for (const value of [undefined, null, 42, ['/dashboard'], { path: '/' }]) assert.equal(toSafeLocalPath(value, ORIGIN), '/');
  });
});
