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

/**
 * `source` says where the answer came from: `query` (`isChosen`), `cookie`, `header` (a range of
 * Accept-Language matched one of our languages), or `default` (nothing stated, or nothing that
 * matched: `*`, which Node's fetch sends, or only languages we do not have).
 */
export function negotiateLocale(input: { query?: unknown; cookie?: unknown; acceptLanguage?: string | undefined }): {
  locale: Locale;
  isChosen: boolean;
  source: 'query' | 'cookie' | 'header' | 'default';
} {
  const chosen = toLocale(input.query);
  if (chosen !== null) return { locale: chosen, isChosen: true, source: 'query' };
  const remembered = toLocale(input.cookie);
  if (remembered !== null) return { locale: remembered, isChosen: false, source: 'cookie' };
  const header = input.acceptLanguage;
  const fallback = { locale: DEFAULT_LOCALE, isChosen: false, source: 'default' } as const;
  if (header === undefined || header === '' || header.length > 1024) return fallback;
  for (const range of new Negotiator({ headers: { 'accept-language': header } }).languages()) {
    if (range === '*') return fallback;
    const found = toLocale(range) ?? BY_PRIMARY.get(range.split('-')[0]!.toLowerCase());
    if (found !== undefined && found !== null) return { locale: found, isChosen: false, source: 'header' };
  }
  return fallback;
}

/**
 * The one `lang` of a URL's query, or undefined: a repeated `lang` counts as none, as Fastify's
 * parsed query (an array) does for the page itself, so a page and what is stored never disagree.
 */
export function langParameter(url: string): string | undefined {
  const queryAt = url.indexOf('?');
  if (queryAt === -1) return undefined;
  const values = new URLSearchParams(url.slice(queryAt + 1)).getAll('lang');
  return values.length === 1 ? values[0] : undefined;
}

/**
 * A top-level navigation the person made on our origin, or typed/bookmarked (`Sec-Fetch-Site:
 * same-origin` or `none`, `Sec-Fetch-Mode: navigate`): what may remember a language choice. Not a
 * link, form or image from another site (a sibling subdomain is `same-site`). A client that sends
 * no Fetch Metadata (an older browser, a script) is taken at its word: every current browser sends
 * it, so a page elsewhere cannot pass for one of ours in them.
 */
export function isOwnNavigation(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  const site = headers['sec-fetch-site'];
  const mode = headers['sec-fetch-mode'];
  if (site === undefined) return mode === undefined || mode === 'navigate';
  return (site === 'same-origin' || site === 'none') && (mode === undefined || mode === 'navigate');
}
