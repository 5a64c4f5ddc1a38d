/**
 * Message catalogs: each module's `messages/<locale>.json` holds its texts as ICU messages
 * (plurals, selects, `{name}` arguments, `<link>…</link>` tags; formatted by `intl-messageformat`),
 * under keys that begin with the module's name. They are checked when the service starts, so a
 * broken translation stops the start and never reaches a page: every language has exactly English's
 * keys, each message parses, and a translation uses only the arguments and tags English uses.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { IntlMessageFormat } from 'intl-messageformat';
import { DEFAULT_LOCALE, LOCALES, toLocale, type Locale } from './locales.ts';

/** One module's catalogs: language -> key -> ICU message. */
export type ModuleMessages = Readonly<Partial<Record<Locale, Readonly<Record<string, string>>>>>;

/** Reads `dir/<locale>.json` for every language there is a file for (a file of another name stops the start). */
export function readMessages(dir: string): ModuleMessages {
  const catalogs: Partial<Record<Locale, Record<string, string>>> = {};
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.json'))) {
    const locale = toLocale(file.slice(0, -'.json'.length));
    if (locale === null || `${locale}.json` !== file) throw new Error(`messages: ${join(dir, file)} is not named after a language of LOCALES (${LOCALES.join(', ')})`);
    const parsed = JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.values(parsed).every((value) => typeof value === 'string')) {
      throw new Error(`messages: ${join(dir, file)} must be one JSON object of strings`);
    }
    catalogs[locale] = parsed as Record<string, string>;
  }
  return catalogs;
}

/** The argument and tag names a message uses (`{count, plural, …}`, `<link>`), however deep. */
function namesIn(message: string, locale: Locale): Set<string> {
  const names = new Set<string>();
  const walk = (elements: readonly unknown[]) => {
    for (const element of elements as Array<{ type: number; value?: string; options?: Record<string, { value: unknown[] }>; children?: unknown[] }>) {
      // Literal (0) and the plural's `#` (7) carry no name.
      if (element.type !== 0 && element.type !== 7 && typeof element.value === 'string') names.add(element.value);
      for (const option of Object.values(element.options ?? {})) walk(option.value);
      if (element.children !== undefined) walk(element.children);
    }
  };
  walk(new IntlMessageFormat(message, locale).getAst());
  return names;
}

/**
 * Every module's catalogs as one, checked: keys owned by their module (`<module>.…`), English
 * complete, every other language with exactly English's keys, each message parsing, and no
 * translation naming an argument or tag English does not. Throws listing every problem.
 */
export function mergeCatalogs(modules: ReadonlyArray<{ name: string; messages: ModuleMessages }>): Readonly<Record<Locale, Readonly<Record<string, string>>>> {
  const problems: string[] = [];
  const merged = Object.fromEntries(LOCALES.map((locale) => [locale, {} as Record<string, string>])) as Record<Locale, Record<string, string>>;
  for (const { name, messages } of modules) {
    const english = messages[DEFAULT_LOCALE] ?? {};
    for (const locale of LOCALES) {
      const catalog = messages[locale];
      if (catalog === undefined) {
        problems.push(`${name}: no ${locale} catalog`);
        continue;
      }
      for (const key of Object.keys(english)) if (!Object.hasOwn(catalog, key)) problems.push(`${name}: ${locale} lacks "${key}"`);
      for (const [key, message] of Object.entries(catalog)) {
        if (!key.startsWith(`${name}.`)) problems.push(`${name}: "${key}" must begin with "${name}."`);
        if (!Object.hasOwn(english, key)) problems.push(`${name}: ${locale} has "${key}", which English does not`);
        let names: Set<string>;
        try {
          names = namesIn(message, locale);
        } catch (error) {
          problems.push(`${name}: ${locale} "${key}" does not parse (${(error as Error).message})`);
          continue;
        }
        if (locale !== DEFAULT_LOCALE && Object.hasOwn(english, key)) {
          const allowed = namesIn(english[key]!, DEFAULT_LOCALE);
          for (const used of names) if (!allowed.has(used)) problems.push(`${name}: ${locale} "${key}" uses {${used}}, which English does not`);
        }
        if (Object.hasOwn(merged[locale], key)) problems.push(`"${key}" is declared twice`);
        merged[locale][key] = message;
      }
    }
  }
  if (problems.length > 0) throw new Error(`messages:\n  - ${problems.join('\n  - ')}`);
  return merged;
}
