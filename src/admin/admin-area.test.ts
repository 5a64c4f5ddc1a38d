/**
 * The admin area's navigation comes from the modules (`adminNav`, module.ts): in their order, one
 * module per path, rendered by the shared header with the current area marked.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectAdminNav, defineModule } from '../module.ts';
import { MODULES } from '../modules.ts';
import { createAdminPageRenderer } from './admin-area.ts';
import { fixedPageContext } from '../web/page-context.ts';

describe('the admin area\'s navigation', () => {
  it('lists the modules\' links in their order', () => {
    assert.deepEqual(
      collectAdminNav(MODULES).map((entry) => entry.path),
      ['/admin/overview', '/admin', '/admin/clients', '/admin/organizations', '/admin/webhooks', '/admin/events'],
    );
  });

  it('refuses a path two modules declare', () => {
    const entry = { path: '/admin/twice', labelKey: 'x.adminNav', section: 'twice', order: 1 };
    assert.throws(() => collectAdminNav([defineModule({ name: 'one', adminNav: [entry] }), defineModule({ name: 'two', adminNav: [entry] })]), /"\/admin\/twice" is declared by both "one" and "two"/);
  });

  it('renders every link in the header, the page\'s own area marked current', () => {
    const dir = mkdtempSync(join(tmpdir(), 'admin-area-'));
    try {
      writeFileSync(join(dir, 'probe-page.eta'), "<%~ include('admin-header', it) %>");
      const nav = [
        { path: '/admin/b', labelKey: 'b', section: 'b', order: 2 },
        { path: '/admin/a', labelKey: 'a', section: 'a', order: 1 },
      ];
      const pages = createAdminPageRenderer<{ 'probe-page': { section: string; alerts: [] } }>([join(dir, 'probe-page.eta')], nav);
      const i18n = { t: (key: string) => `[${key}]`, html: () => '', links: [], brand: {} } as never;
      const html = pages.html(fixedPageContext(i18n), 'probe-page', { title: 'probe', section: 'a', alerts: [] });
      assert.match(html, /<a href="\/admin\/b">\[b\]<\/a>\n {2}<a href="\/admin\/a" aria-current="page">\[a\]<\/a>\n {2}<a href="\/dashboard">/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
