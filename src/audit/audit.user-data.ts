/**
 * What the audit log holds of a user (module.ts, `userData`): the events about them. When their
 * account is deleted, their address, network addresses and browsers are erased from the history
 * (the audit module is listed first, so it erases last: after the other modules' erasures have
 * recorded their events).
 */
import type { UserDataHandler } from '../module.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import type { AuditEvent, AuditService } from './audit.service.ts';

const EXPORT_PAGE = 500;

export function auditUserData(audit: AuditService): UserDataHandler {
  return {
    erase: ({ user, db }) => audit.erasePersonalData(user.id, user.email, { db }),
    async export(userId) {
      const events: AuditEvent[] = [];
      let before: KeysetPosition | undefined;
      do {
        const page = await audit.listEvents({ userId, limit: EXPORT_PAGE, ...(before !== undefined && { before }) });
        events.push(...page.events);
        before = page.next ?? undefined;
      } while (before !== undefined);
      return { events };
    },
  };
}
