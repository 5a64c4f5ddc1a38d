/**
 * Which language a request gets: `?lang=` (a person's choice, then remembered in a cookie), the
 * cookie, the browser's `Accept-Language` (weights and ranges as RFC 9110 has them, through
 * `negotiator`: `de-CH` finds `de`, `pt` finds `pt-BR`), else English.
 */
import Negotiator from 'negotiator';
import { DEFAULT_LOCALE, LOCALES, toLocale, type Locale } from './locales.ts';

export const LOCALE_COOKIE = 'gatehouse.lang';

/** A language range's primary subtag finds our one tag with it (`pt` and `pt-PT` find `pt-BR`). */
const BY_PRIMARY = new Map<string, Locale>(LOCALES.map((locale) => [locale.split('-')[0]!.toLowerCase(), locale]));

export function negotiateLocale(input: { query?: unknown; cookie?: unknown; acceptLanguage?: string | undefined }): { locale: Locale; isChosen: boolean } {
  const chosen = toLocale(input.query);
  if (chosen !== null) return { locale: chosen, isChosen: true };
  const remembered = toLocale(input.cookie);
  if (remembered !== null) return { locale: remembered, isChosen: false };
  const header = input.acceptLanguage;
  if (header === undefined || header === '' || header.length > 1024) return { locale: DEFAULT_LOCALE, isChosen: false };
  for (const range of new Negotiator({ headers: { 'accept-language': header } }).languages()) {
    if (range === '*') return { locale: DEFAULT_LOCALE, isChosen: false };
    const found = toLocale(range) ?? BY_PRIMARY.get(range.split('-')[0]!.toLowerCase());
    if (found !== undefined && found !== null) return { locale: found, isChosen: false };
  }
  return { locale: DEFAULT_LOCALE, isChosen: false };
}
