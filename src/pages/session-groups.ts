/**
 * The dashboard's sessions by device: the sessions of one device at one address (a script signing
 * in through the API again and again, say) are one card with their count, each still listed inside
 * it to end; this browser's session is always a card of its own, first.
 */
import type { RelativeSessionItem } from '../sessions/session-items.ts';

export interface SessionGroup {
  /** Its first session's (the most recently used): the card's device, address and times. */
  first: RelativeSessionItem;
  /** All of them, most recently used first (one: an ordinary card). */
  sessions: RelativeSessionItem[];
}

/** `items` as toSessionItems ordered them (this browser's first, then the most recently used). */
export function groupSessions(items: readonly RelativeSessionItem[]): SessionGroup[] {
  const groups: SessionGroup[] = [];
  const byDevice = new Map<string, SessionGroup>();
  for (const item of items) {
    if (item.isCurrent) {
      groups.push({ first: item, sessions: [item] });
      continue;
    }
    const key = JSON.stringify([item.device, item.userAgent, item.ip]);
    const group = byDevice.get(key);
    if (group !== undefined) group.sessions.push(item);
    else {
      const created = { first: item, sessions: [item] };
      byDevice.set(key, created);
      groups.push(created);
    }
  }
  return groups;
}
