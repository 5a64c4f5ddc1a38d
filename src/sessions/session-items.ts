/** A person's sessions as the pages list them (the dashboard's and the admin's user page). */
import type { Translator } from '../i18n/translator.ts';
import type { SessionSummary } from './session.types.ts';
import { formatRelativeTime, formatTime, type RelativeTimeText, type TimeText } from '../web/time-text.ts';
import { deviceLabel } from './device-label.ts';
import { ENGLISH_SESSION_TEXTS } from './session-texts.ts';
import type { LocateAddress, PlaceName } from './place.ts';

export interface SessionItem {
  id: string;
  isCurrent: boolean;
  /** "Chrome on Linux" (device-label.ts), or "Unknown device", in the page's language. */
  device: string;
  /** The raw User-Agent header, for the admin's detail view. */
  userAgent: string;
  ip: string;
  /** "Berlin, Germany" in the page's language, from the operator's database (place.ts); null without one or when it cannot tell. */
  place: string | null;
  createdAt: TimeText;
  lastSeenAt: TimeText;
  expiresAt: TimeText;
}

/** A session as toSessionItems makes it: its times also told from now ("3 hours ago"), for the dashboard. */
export interface RelativeSessionItem extends SessionItem {
  createdAt: RelativeTimeText;
  lastSeenAt: RelativeTimeText;
  expiresAt: RelativeTimeText;
}

export interface SessionItemOptions {
  /** The page's language (`reply.page.i18n`, web/page-context.ts): device names and times in it. Without it, English, and times as "2026-01-05 14:03 UTC". */
  i18n?: Pick<Translator, 't' | 'locale'>;
  /** Now, for "3 hours ago": the service's clock (tests move it). Date.now() without it. */
  nowMs?: number;
  /** Where an address is (`await services.places.locator(i18n.locale)`); without it, no places. */
  locate?: LocateAddress | null;
}

/** "Berlin, Germany" ("ベルリン、ドイツ"), or whichever of the two the database knows. */
function placeText({ city, country }: PlaceName, i18n: Pick<Translator, 't'>): string {
  if (city !== null && country !== null) return i18n.t('sessions.place.cityCountry', { city, country });
  return city ?? country ?? '';
}

/** A person's sessions for a page: the one this browser uses (`currentId`) first, then the most recently used. */
export function toSessionItems(list: readonly SessionSummary[], currentId: string | null, options: SessionItemOptions = {}): RelativeSessionItem[] {
  const i18n = options.i18n ?? ENGLISH_SESSION_TEXTS;
  const nowMs = options.nowMs ?? Date.now();
  const time = (epochMs: number): RelativeTimeText => ({ ...formatRelativeTime(epochMs, nowMs, i18n.locale), ...(options.i18n === undefined && { text: formatTime(epochMs).text }) });
  const unknownDevice = i18n.t('sessions.device.unknown');
  const placeOfSession = (ip: string | null): string | null => {
    const place = options.locate?.(ip) ?? null;
    return place === null ? null : placeText(place, i18n);
  };
  return [...list]
    .sort((a, b) => Number(b.id === currentId) - Number(a.id === currentId) || b.lastSeenAt - a.lastSeenAt)
    .map((s) => ({
      id: s.id,
      isCurrent: s.id === currentId,
      device: deviceLabel(s.userAgent, i18n) ?? unknownDevice,
      userAgent: s.userAgent ?? unknownDevice,
      ip: s.ip ?? i18n.t('sessions.ip.unknown'),
      place: placeOfSession(s.ip),
      createdAt: time(s.createdAt),
      lastSeenAt: time(s.lastSeenAt),
      expiresAt: time(s.expiresAt),
    }));
}
