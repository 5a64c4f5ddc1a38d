/**
 * The languages of the hosted pages and mails. Adding one is a catalog file per module
 * (`messages/<tag>.json`, the keys of `en.json`, checked at start and by a test) and a line here.
 */
export const LOCALES = ['en', 'de', 'fr', 'es', 'pt-BR', 'ja'] as const;
export type Locale = (typeof LOCALES)[number];

export const DEFAULT_LOCALE: Locale = 'en';

/** Each language in its own words (the language switcher) and its writing direction. */
export const LOCALE_INFO: Readonly<Record<Locale, { name: string; dir: 'ltr' | 'rtl' }>> = {
  en: { name: 'English', dir: 'ltr' },
  de: { name: 'Deutsch', dir: 'ltr' },
  fr: { name: 'Français', dir: 'ltr' },
  es: { name: 'Español', dir: 'ltr' },
  'pt-BR': { name: 'Português (Brasil)', dir: 'ltr' },
  ja: { name: '日本語', dir: 'ltr' },
};

const BY_LOWER_CASE = new Map<string, Locale>(LOCALES.map((locale) => [locale.toLowerCase(), locale]));

/** `value` as one of ours (any letter case: `pt-br`), or null. Never trusts more than a tag. */
export function toLocale(value: unknown): Locale | null {
  return typeof value === 'string' && value.length <= 16 ? (BY_LOWER_CASE.get(value.toLowerCase()) ?? null) : null;
}
