/**
 * The admin area's frame: every module's pages for administrators (the admin module's users and
 * audit log, the clients', organizations' and webhooks' pages…) share its header,
 * `templates/admin-header.eta`: the navigation, with the links the modules declare (`adminNav`,
 * module.ts) in their order, then the page's alerts. A page gives the header its `section` (the
 * link marked current) and `alerts`; the renderer adds the navigation.
 */
import { join } from 'node:path';
import type { AdminNavEntry } from '../module.ts';
import { createPageRenderer, type PageRenderer } from '../web/render.ts';

const ADMIN_HEADER = join(import.meta.dirname, 'templates', 'admin-header.eta');

/** A renderer of an admin area's page templates (`files`) with the shared header, which lists `nav`. */
export function createAdminPageRenderer<Pages extends object>(files: readonly string[], nav: readonly AdminNavEntry[]): PageRenderer<Pages> {
  const pages = createPageRenderer<Pages>([...files.filter((file) => file !== ADMIN_HEADER), ADMIN_HEADER]);
  return {
    html: (context, page, model) => pages.html(context, page, { ...model, adminNav: nav }),
    send: (reply, page, model, options) => pages.send(reply, page, { ...model, adminNav: nav }, options),
  };
}
