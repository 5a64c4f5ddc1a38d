import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { declaredErrorCodes } from './errors.ts';
import { errorCatalogue } from './modules.ts';
import { ERRORS_DOC, renderErrorCatalogue } from '../scripts/generate-docs.ts';

describe('docs/errors.md', () => {
  it('is exactly what `npm run docs` generates from the error codes of the core and the modules', () => {
    assert.equal(
      readFileSync(ERRORS_DOC, 'utf8'),
      renderErrorCatalogue(),
      'docs/errors.md differs from the error codes in the code: run `npm run docs` and commit the result',
    );
  });

  it('lists exactly the codes declared, each by the module that declares it', () => {
    const catalogue = errorCatalogue();
    const declared = Object.fromEntries([...declaredErrorCodes()].map(([code, { status, message, module }]) => [code, { status, message, module }]));
    assert.deepEqual(catalogue, declared, 'an errors file was imported that no module in modules.ts lists (or the other way round)');
  });

  it('has one row per code, with its status, message and module', () => {
    const page = renderErrorCatalogue();
    for (const [code, { status, message, module }] of Object.entries(errorCatalogue())) {
      const rows = page.split('\n').filter((line) => line.startsWith(`| \`${code}\` |`));
      assert.equal(rows.length, 1, code);
      assert.match(rows[0]!, new RegExp(`^\\| \`${code}\` \\| ${status} `), code);
      assert.ok(rows[0]!.includes(message.replaceAll('|', '\\|')), code);
      assert.ok(rows[0]!.endsWith(` | ${module} |`), code);
    }
  });

  it('escapes what would break the table', () => {
    const page = renderErrorCatalogue({ SOME_CODE: { status: 418, message: 'a | b\nc', module: 'tea' } });
    assert.ok(page.includes("| `SOME_CODE` | 418 I'm a Teapot | a \\| b c | tea |"), page);
  });
});
