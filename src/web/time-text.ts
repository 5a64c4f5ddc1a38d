/**
 * Moments as pages show them: a `<time datetime>` value and text. Times are in UTC, said so on the
 * page: the server does not know the reader's time zone, and pages run no script to find it out.
 */
export interface TimeText {
  iso: string;
  text: string;
}

/** A moment also told from now: "3 hours ago", "vor 3 Stunden", "3 時間前" (`text` stays the date and time). */
export interface RelativeTimeText extends TimeText {
  relative: string;
}

/** Formatters are built once per language and kept (there are six languages). */
const dateTimeFormats = new Map<string, Intl.DateTimeFormat>();
const relativeFormats = new Map<string, { always: Intl.RelativeTimeFormat; auto: Intl.RelativeTimeFormat }>();

function dateTimeFormat(locale: string): Intl.DateTimeFormat {
  let format = dateTimeFormats.get(locale);
  if (format === undefined) {
    format = new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZone: 'UTC', timeZoneName: 'short' });
    dateTimeFormats.set(locale, format);
  }
  return format;
}

/**
 * `epochMs` as the page's language writes a date and time ("Jan 5, 2026, 2:03 PM UTC",
 * "5. Jan. 2026, 14:03 UTC"). Without a locale: "2026-01-05 14:03 UTC", the form of the pages
 * whose texts are not in the catalogs yet.
 */
export function formatTime(epochMs: number, locale?: string): TimeText {
  const iso = new Date(epochMs).toISOString();
  return { iso, text: locale === undefined ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : dateTimeFormat(locale).format(epochMs) };
}

const DAY_MS = 86_400_000;

/** Each unit, its length, and from how far away it is used: days up to two months ("in 30 days", a session's lifetime, not "in 1 month"). */
const UNITS: ReadonlyArray<{ unit: Intl.RelativeTimeFormatUnit; sizeMs: number; fromMs: number }> = [
  { unit: 'year', sizeMs: 365 * DAY_MS, fromMs: 365 * DAY_MS },
  { unit: 'month', sizeMs: 30 * DAY_MS, fromMs: 60 * DAY_MS },
  { unit: 'day', sizeMs: DAY_MS, fromMs: DAY_MS },
  { unit: 'hour', sizeMs: 3_600_000, fromMs: 3_600_000 },
  { unit: 'minute', sizeMs: 60_000, fromMs: 60_000 },
];

/**
 * `epochMs` told from `nowMs` in `locale`, in the largest whole unit that fits ("3 hours ago",
 * "in 30 days"); under a minute either way is "now". The date and time are in `text`, for a title.
 */
export function formatRelativeTime(epochMs: number, nowMs: number, locale: string): RelativeTimeText {
  let formats = relativeFormats.get(locale);
  if (formats === undefined) {
    // "always": "1 day ago", not "yesterday", which would be a calendar day this does not count.
    formats = { always: new Intl.RelativeTimeFormat(locale, { numeric: 'always' }), auto: new Intl.RelativeTimeFormat(locale, { numeric: 'auto' }) };
    relativeFormats.set(locale, formats);
  }
  const elapsedMs = epochMs - nowMs;
  const unit = UNITS.find(({ fromMs }) => Math.abs(elapsedMs) >= fromMs);
  const relative = unit === undefined ? formats.auto.format(0, 'second') : formats.always.format(Math.trunc(elapsedMs / unit.sizeMs), unit.unit);
  return { ...formatTime(epochMs, locale), relative };
}
