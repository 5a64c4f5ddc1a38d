import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CATALOGUE } from './errors.ts';
import { ERRORS_DOC, renderErrorCatalogue } from '../scripts/generate-docs.ts';

describe('docs/errors.md', () => {
  it('is exactly what `npm run docs` generates from ERROR_CATALOGUE', () => {
    assert.equal(
      readFileSync(ERRORS_DOC, 'utf8'),
      renderErrorCatalogue(),
      'docs/errors.md differs from ERROR_CATALOGUE in src/errors.ts: run `npm run docs` and commit the result',
    );
  });

  it('has one row per code, with its status and message', () => {
    const page = renderErrorCatalogue();
    for (const [code, { status, message }] of Object.entries(ERROR_CATALOGUE)) {
      const rows = page.split('\n').filter((line) => line.startsWith(`| \`${code}\` |`));
      assert.equal(rows.length, 1, code);
      assert.match(rows[0]!, new RegExp(`^\\| \`${code}\` \\| ${status} `), code);
      assert.ok(rows[0]!.includes(message.replaceAll('|', '\\|')), code);
    }
  });

  it('escapes what would break the table', () => {
    const page = renderErrorCatalogue({ SOME_CODE: { status: 418, message: 'a | b\nc' } });
    assert.ok(page.includes("| `SOME_CODE` | 418 I'm a Teapot | a \\| b c |"), page);
  });
});
