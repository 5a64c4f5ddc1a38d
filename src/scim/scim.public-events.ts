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
    ['scim.user_provisioned', 600],
    ['scim.user_deprovisioned', 610],
    ['scim.user_deleted', 620],
    ['scim.group_changed', 630],
  ] as const
)
  .map(([type, order]): PublicEventType => ({ type, from: type, order, payload: scimFacts }))
  // A SCIM token's changes, as `scim.credential_*` (ids only: never the token).
  .concat(
    (
      [
        ['scim.credential_created', 'scim.token_created', 640],
        ['scim.credential_rotated', 'scim.token_rotated', 650],
        ['scim.credential_revoked', 'scim.token_revoked', 660],
      ] as const
    ).map(([type, from, order]) => ({ type, from, order, payload: scimFacts })),
  );
