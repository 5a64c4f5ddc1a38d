/**
 * Issue 31: no module spells the pages module's routes. The hub pages every page links back to
 * (sign-in, sign-out, dashboard) are named once (hub-pages.ts); every template outside the pages
 * module links them through `it.paths`, and the pages the renderer serves carry those paths.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { HUB_PAGES } from './hub-pages.ts';

const SRC = join(import.meta.dirname, '..');

function templates(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return templates(path);
    return entry.name.endsWith('.eta') ? [path] : [];
  });
}

describe('the hub pages', () => {
  it('are linked by name, never by path, from every template outside the pages module', () => {
    const offenders: string[] = [];
    for (const file of templates(SRC)) {
      const path = relative(SRC, file);
      if (path.startsWith('pages/')) continue;
      const text = readFileSync(file, 'utf8');
      for (const hub of Object.values(HUB_PAGES)) {
        if (new RegExp(`href="${hub}(["?#])`).test(text)) offenders.push(`${path}: ${hub}`);
      }
    }
    assert.deepEqual(offenders, []);
  });
});
