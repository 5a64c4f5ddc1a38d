/**
 * Page and mail templates compile when first rendered (web/eta-on-first-use.ts), not at start:
 * this is the check that every one of them compiles, so a broken template fails CI rather than a request.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Eta } from 'eta/core';
import { createPageRenderer } from './render.ts';
import type { PageContext } from './page-context.ts';

const SRC = join(import.meta.dirname, '..');

describe('page templates', () => {
  it('every template under src compiles', () => {
    const files = (readdirSync(SRC, { recursive: true }) as string[]).filter((file) => file.endsWith('.eta'));
    assert.ok(files.length > 50, 'the templates are found');
    const eta = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });
    const broken = files.flatMap((file) => {
      try {
        eta.compile(readFileSync(join(SRC, file), 'utf8'));
        return [];
      } catch (error) {
        return [`${relative(SRC, file)}: ${(error as Error).message}`];
      }
    });
    assert.deepEqual(broken, []);
  });

  it('every input names its type, and every text-like type is one the stylesheet styles', () => {
    // An input without a type is a text box to the browser but matches none of gatehouse.css's
    // `input[type=…]` rules, so it is drawn unstyled beside its neighbours (the admin users list's
    // organization box was, until this check).
    const css = readFileSync(join(SRC, 'web', 'gatehouse.css'), 'utf8');
    const styled = new Set([...css.matchAll(/input\[type="([a-z-]+)"\]/g)].map((match) => match[1]));
    assert.ok(styled.has('text') && styled.has('email'), 'the stylesheet\'s input rules are found');
    const own = new Set(['checkbox', 'radio', 'hidden', 'submit', 'file']);
    const files = (readdirSync(SRC, { recursive: true }) as string[]).filter((file) => file.endsWith('.eta'));
    const problems = files.flatMap((file) =>
      [...readFileSync(join(SRC, file), 'utf8').matchAll(/<input\b(?:<%[\s\S]*?%>|[^>])*>/g)].flatMap(([tag]) => {
        const type = /\stype="([^"<]+)"/.exec(tag)?.[1];
        if (type === undefined) return [`${file}: ${tag.slice(0, 60)}… has no type`];
        if (type.includes('<%') || own.has(type) || styled.has(type)) return [];
        return [`${file}: type="${type}" has no rule in gatehouse.css`];
      }),
    );
    assert.deepEqual(problems, []);
  });

  it('every table the reflow stylesheet shows as blocks says it is a table (explicit ARIA roles)', () => {
    // Displayed as blocks on a phone or a tablet (gatehouse.css .table-reflow), a table loses its
    // semantics in some screen readers (WebKit's among them) unless its parts carry their roles.
    const files = (readdirSync(SRC, { recursive: true }) as string[]).filter((file) => file.endsWith('.eta'));
    const tables = files.flatMap((file) => [...readFileSync(join(SRC, file), 'utf8').matchAll(/<table class="[^"]*\btable-reflow\b[^"]*"[^>]*>[\s\S]*?<\/table>/g)].map(([table]) => ({ file, table })));
    assert.ok(tables.length >= 8, 'the reflowed tables are found');
    const problems = tables.flatMap(({ file, table }) => {
      const missing = [
        ['table', /<table\b(?![^>]*role="table")/g],
        ['rowgroup', /<t(?:head|body)\b(?![^>]*role="rowgroup")/g],
        ['row', /<tr\b(?![^>]*role="row")/g],
        ['columnheader', /<th\b(?![^>]*role="(?:columnheader|rowheader)")/g],
        ['cell', /<td\b(?![^>]*role="cell")/g],
      ].filter(([, pattern]) => (pattern as RegExp).test(table)).map(([role]) => role as string);
      return missing.length === 0 ? [] : [`${file}: without role ${missing.join(', ')}`];
    });
    assert.deepEqual(problems, []);
  });

  it('are read when first rendered: a broken one fails its own page only, a missing file or a duplicate name the start', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-templates-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'good.eta'), '<p><%= it.word %></p>');
    writeFileSync(join(dir, 'broken.eta'), '<p><%= it.word </p>');
    const pages = createPageRenderer<{ good: { word: string }; broken: { word: string } }>([join(dir, 'good.eta'), join(dir, 'broken.eta')]);
    const context = { csrfToken: '', scriptNonce: '' } as unknown as PageContext;
    assert.equal(pages.html(context, 'good', { title: 'x', word: '<b>' }), '<p>&lt;b&gt;</p>');
    // Read afresh only until compiled: the file changing after its first render changes nothing.
    writeFileSync(join(dir, 'good.eta'), '<p>changed</p>');
    assert.equal(pages.html(context, 'good', { title: 'x', word: 'again' }), '<p>again</p>');
    assert.throws(() => pages.html(context, 'broken', { title: 'x', word: 'y' }), /unclosed tag/);
    assert.throws(() => pages.html(context, 'missing' as 'good', { title: 'x', word: 'y' }), /Failed to get template 'missing'/);
    assert.throws(() => createPageRenderer([join(dir, 'gone.eta')]), /no such file: .*gone\.eta/);
    writeFileSync(join(dir, 'layout.eta'), '');
    assert.throws(() => createPageRenderer([join(dir, 'layout.eta')]), /two templates are named layout/);
  });
});
