/**
 * Eta templates read and compiled when first rendered rather than when a renderer is made: each
 * page's and mail's compiled function stays resident once made, and most are never shown by a
 * given instance. src/web/templates.test.ts compiles every template under src, so a broken one
 * still fails CI.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Eta } from 'eta/core';

/**
 * Makes `eta` find each template of `paths` (name -> file) by compiling its file the first time
 * Eta looks the name up (a page, its layout, a partial), and keeping it. A name neither loaded nor
 * in `paths` is refused by Eta, as before. A file that is not there stops the start, as when
 * every template was read then.
 */
export function compileOnFirstUse(eta: Eta, paths: ReadonlyMap<string, string>): void {
  const missing = [...paths.values()].filter((path) => !existsSync(path));
  if (missing.length > 0) throw new Error(`templates: no such file: ${missing.join(', ')}`);
  const templates = eta.templatesSync;
  // Typed as always finding one; Eta itself refuses an unknown name when it gets undefined.
  const cached = templates.get.bind(templates) as (name: string) => ReturnType<typeof templates.get> | undefined;
  templates.get = ((name: string) => {
    const found = cached(name);
    if (found !== undefined) return found;
    const path = paths.get(name);
    if (path === undefined) return undefined;
    eta.loadTemplate(name, readFileSync(path, 'utf8'));
    return cached(name);
  }) as typeof templates.get;
}
