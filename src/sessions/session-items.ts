/** A person's sessions as the pages list them (the dashboard's and the admin's user page). */
import type { SessionSummary } from './session.types.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { deviceLabel } from './device-label.ts';

export interface SessionItem {
  id: string;
  isCurrent: boolean;
  /** "Chrome on Linux" (device-label.ts), or "Unknown device". */
  device: string;
  /** The raw User-Agent header, for the admin's detail view. */
  userAgent: string;
  ip: string;
  createdAt: TimeText;
  lastSeenAt: TimeText;
  expiresAt: TimeText;
}

/** A person's sessions for a page: the one this browser uses (`currentId`) first, then the most recently used. */
export function toSessionItems(list: readonly SessionSummary[], currentId: string | null): SessionItem[] {
  return [...list]
    .sort((a, b) => Number(b.id === currentId) - Number(a.id === currentId) || b.lastSeenAt - a.lastSeenAt)
    .map((s) => ({
      id: s.id,
      isCurrent: s.id === currentId,
      device: deviceLabel(s.userAgent) ?? 'Unknown device',
      userAgent: s.userAgent ?? 'Unknown device',
      ip: s.ip ?? 'Unknown',
      createdAt: formatTime(s.createdAt),
      lastSeenAt: formatTime(s.lastSeenAt),
      expiresAt: formatTime(s.expiresAt),
    }));
}
