/**
 * What the audit log holds of a user (module.ts, `userData`): the events about them. When their
 * account is deleted, their address, network addresses and browsers are erased from the history
 * (the audit module is listed first, so it erases last: after the other modules' erasures have
 * recorded their events). The export holds the newest EXPORT_EVENT_LIMIT events, newest first
 * (`more`: older ones exist; an administrator reads them with `GET /api/admin/events?userId=`).
 */
import type { UserDataHandler } from '../module.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import type { AuditEvent, AuditService } from './audit.service.ts';

const EXPORT_PAGE = 500;
/** The most events an export holds (the newest). */
export const EXPORT_EVENT_LIMIT = 1_000;

export function auditUserData(audit: AuditService): UserDataHandler {
  return {
    erase: ({ user, db }) => audit.erasePersonalData(user.id, user.email, { db }),
    async export(userId) {
      const events: AuditEvent[] = [];
      let before: KeysetPosition | undefined;
      do {
        const limit = Math.min(EXPORT_PAGE, EXPORT_EVENT_LIMIT - events.length);
        const page = await audit.listEvents({ userId, limit, ...(before !== undefined && { before }) });
        events.push(...page.events);
        before = page.next ?? undefined;
      } while (before !== undefined && events.length < EXPORT_EVENT_LIMIT);
      return { events, limit: EXPORT_EVENT_LIMIT, more: before !== undefined };
    },
  };
}
