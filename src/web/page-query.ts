/**
 * Query-string fields of the pages. Anyone can put anything in a link, and a page must still
 * render: values are taken leniently (the first of repeated ones, cut to size, empty as none)
 * rather than refused with a JSON validation error nobody would read.
 */
import { z } from 'zod';

/** Long enough for any real code; a longer one is cut, not refused, so the page still explains. */
const MAX_SHOWN_CODE_LENGTH = 100;

/** Query values are strings, or arrays when repeated: take the first. */
export const firstValue = (value: unknown) => (Array.isArray(value) ? value[0] : value);

/** At most `max` characters (code points, so a pair is never split). */
const cut = (text: string, max: number) => Array.from(text).slice(0, max).join('');

/** An error or notice code from a link, to be shown back: never a reason to refuse the page. Empty is none. */
export const shownCode = z
  .preprocess(firstValue, z.string())
  .transform((code) => (code === '' ? undefined : cut(code, MAX_SHOWN_CODE_LENGTH)))
  .optional();

/** A field of a GET form (a search, a filter, a cursor): trimmed and cut to `max`; empty is none. */
export function queryText(max: number) {
  return z
    .preprocess(firstValue, z.string())
    .transform((value) => {
      const text = cut(value.trim(), max);
      return text === '' ? undefined : text;
    })
    .optional();
}
