/** The public events (webhooks) made from this module's domain events; see audit/public-events.ts. */
import type { AuditEvent } from '../audit/audit.service.ts';
import { actorOf, detailOf, facts, publicCode, publicId, type PublicEventData, type PublicEventType } from '../audit/public-events.ts';

/** Every organization event's payload: the organization, the member concerned, their role. Never its name (free text). */
function organizationFacts(event: AuditEvent): PublicEventData {
  return facts({
    organizationId: publicId(detailOf(event, 'organizationId')),
    slug: publicCode(detailOf(event, 'slug')),
    userId: publicId(detailOf(event, 'memberUserId')) ?? publicId(detailOf(event, 'memberId')) ?? publicId(event.userId),
    role: publicCode(detailOf(event, 'role')),
    previousRole: publicCode(detailOf(event, 'previousRole')),
    reason: publicCode(event.reason),
    actorUserId: actorOf(event),
  });
}

export const ORGANIZATIONS_PUBLIC_EVENTS: readonly PublicEventType[] = (
  [
    ['organization.created', 130, 'organizations.webhookEvent.created'],
    ['organization.deleted', 140, 'organizations.webhookEvent.deleted'],
    ['organization.member.added', 150, 'organizations.webhookEvent.memberAdded'],
    ['organization.member.removed', 160, 'organizations.webhookEvent.memberRemoved'],
    ['organization.member.updated', 170, 'organizations.webhookEvent.memberUpdated'],
  ] as const
).map(([type, order, description]) => ({ type, from: type, order, description, payload: organizationFacts }));
