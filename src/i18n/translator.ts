/**
 * Texts in a language: `t` for plain text (the templates' `<%= %>` escapes it), `html` for a
 * sentence with markup in it (`New here? <link>Create an account</link>.`): its values escaped,
 * each tag made by the page from its escaped content, for `<%~ %>`. Messages are compiled once per
 * language and key, when first used.
 */
import { IntlMessageFormat } from 'intl-messageformat';
import { DEFAULT_LOCALE, LOCALE_INFO, LOCALES, type Locale } from './locales.ts';

/** Intl.DurationFormat (ECMA-402, in Node since 23): not yet in TypeScript's lib. */
const DurationFormat = (Intl as unknown as { DurationFormat: new (locale: string, options: { style: 'long' }) => { format(duration: Record<string, number>): string } }).DurationFormat;

export type MessageValues = Readonly<Record<string, string | number>>;

export interface Translator {
  readonly locale: Locale;
  readonly dir: 'ltr' | 'rtl';
  t(key: string, values?: MessageValues): string;
  html(key: string, values?: MessageValues, tags?: Readonly<Record<string, (content: string) => string>>): string;
  /** A length of time as words (`1800` -> "30 minutes", "30 Minuten"…): whole days past one day, else whole hours, else minutes. */
  duration(seconds: number): string;
  /** Every language with its own name, for a switcher. */
  readonly languages: ReadonlyArray<{ locale: Locale; name: string; isCurrent: boolean }>;
}

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]!);

export interface Translations {
  translator(locale: Locale): Translator;
}

export function createTranslations(catalogs: Readonly<Record<Locale, Readonly<Record<string, string>>>>): Translations {
  const compiled = new Map<string, IntlMessageFormat>();
  const formatOf = (locale: Locale, key: string): IntlMessageFormat | null => {
    const id = `${locale}\u0000${key}`;
    let format = compiled.get(id);
    if (format === undefined) {
      const message = catalogs[locale][key] ?? catalogs[DEFAULT_LOCALE][key];
      // Unknown keys are caught by the catalog test; a page still renders, showing the key.
      if (message === undefined) return null;
      format = new IntlMessageFormat(message, locale);
      compiled.set(id, format);
    }
    return format;
  };
  const translators = new Map<Locale, Translator>();
  for (const locale of LOCALES) {
    const durations = new DurationFormat(locale, { style: 'long' });
    translators.set(locale, {
      locale,
      dir: LOCALE_INFO[locale].dir,
      languages: LOCALES.map((other) => ({ locale: other, name: LOCALE_INFO[other].name, isCurrent: other === locale })),
      t(key, values) {
        const format = formatOf(locale, key);
        return format === null ? key : String(format.format(values));
      },
      duration(seconds) {
        const minutes = Math.max(1, Math.floor(seconds / 60));
        const parts: Record<string, number> = minutes % 1440 === 0 && minutes > 1440 ? { days: minutes / 1440 } : minutes % 60 === 0 ? { hours: minutes / 60 } : { minutes };
        return durations.format(parts);
      },
      html(key, values = {}, tags = {}) {
        const format = formatOf(locale, key);
        if (format === null) return escapeHtml(key);
        const escaped: Record<string, unknown> = {};
        for (const [name, value] of Object.entries(values)) escaped[name] = typeof value === 'string' ? escapeHtml(value) : value;
        for (const [name, make] of Object.entries(tags)) escaped[name] = (chunks: unknown[]) => make(chunks.join(''));
        const parts = format.format(escaped);
        return Array.isArray(parts) ? parts.join('') : String(parts);
      },
    });
  }
  return { translator: (locale) => translators.get(locale)! };
}
