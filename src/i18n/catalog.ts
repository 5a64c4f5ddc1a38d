/**
 * Message catalogs: each module's `messages/<locale>.json` holds its texts as ICU messages
 * (plurals, selects, `{name}` arguments, `<link>…</link>` tags; formatted by `intl-messageformat`),
 * under keys that begin with the module's name. A language's files are read when a text in that
 * language is first needed, and a message is parsed when it is first formatted (translator.ts):
 * the six languages hold about 4,800 messages, and parsing them all at every start (the CLI's
 * included) cost about a second of CPU and tens of MB a process mostly never uses. The check that
 * stops a broken translation is `checkCatalogs`, run over every catalog by src/i18n/i18n.test.ts:
 * every language has exactly English's keys, each message parses, and a translation uses only the
 * arguments and tags English uses.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { IntlMessageFormat } from 'intl-messageformat';
import { DEFAULT_LOCALE, LOCALES, toLocale, type Locale } from './locales.ts';

/** One module's catalogs: language -> key -> ICU message. */
export type ModuleMessages = Readonly<Partial<Record<Locale, Readonly<Record<string, string>>>>>;

/**
 * `target[key]` computed by `make` when first read, then kept as a plain property: how a catalog
 * (a module's language, or all modules' merged) is loaded when first used.
 */
function defineOnFirstRead<T extends object>(target: T, key: PropertyKey, make: () => unknown): void {
  Object.defineProperty(target, key, {
    enumerable: true,
    configurable: true,
    get() {
      const value = make();
      Object.defineProperty(target, key, { value, enumerable: true, configurable: false, writable: false });
      return value;
    },
  });
}

/**
 * `dir/<locale>.json` for every language there is a file for. The folder is listed now (a file of
 * another name stops the start); each file is read and checked when its language is first used.
 */
export function readMessages(dir: string): ModuleMessages {
  const catalogs: Partial<Record<Locale, Record<string, string>>> = {};
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.json'))) {
    const locale = toLocale(file.slice(0, -'.json'.length));
    if (locale === null || `${locale}.json` !== file) throw new Error(`messages: ${join(dir, file)} is not named after a language of LOCALES (${LOCALES.join(', ')})`);
    defineOnFirstRead(catalogs, locale, () => readCatalog(join(dir, file)));
  }
  return catalogs;
}

function readCatalog(path: string): Readonly<Record<string, string>> {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.values(parsed).every((value) => typeof value === 'string')) {
    throw new Error(`messages: ${path} must be one JSON object of strings`);
  }
  return Object.freeze(parsed as Record<string, string>);
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

/** Every module's catalogs as one, each language merged when a text in it is first needed (unchecked: see `checkCatalogs`). */
export function mergeCatalogs(modules: ReadonlyArray<{ name: string; messages: ModuleMessages }>): Readonly<Record<Locale, Readonly<Record<string, string>>>> {
  const merged = {} as Record<Locale, Readonly<Record<string, string>>>;
  for (const locale of LOCALES) defineOnFirstRead(merged, locale, () => Object.freeze(Object.assign({}, ...modules.map(({ messages }) => messages[locale] ?? {}))));
  return merged;
}

/**
 * Checks every module's catalogs: keys owned by their module (`<module>.…`), English complete,
 * every other language with exactly English's keys, each message parsing, no translation naming an
 * argument or tag English does not, and no key declared twice. Throws listing every problem. Run
 * by the catalog test over every module, so a broken message fails CI rather than a start.
 */
export function checkCatalogs(modules: ReadonlyArray<{ name: string; messages: ModuleMessages }>): void {
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
}
