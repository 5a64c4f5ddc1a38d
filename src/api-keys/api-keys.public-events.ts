/** The public events (webhooks) made from this module's domain events: ids, kind, roles, scopes and reason codes; never the key. */
import { actorOf, detailOf, facts, publicCode, publicCodes, publicId, publicRoles, type PublicEventType } from '../audit/public-events.ts';
import type { AuditEvent } from '../audit/audit.service.ts';

const keyFacts = (event: AuditEvent) => ({
  keyId: publicId(detailOf(event, 'keyId')),
  kind: publicCode(detailOf(event, 'kind')),
  userId: publicId(event.userId),
  organizationId: publicId(detailOf(event, 'organizationId')),
});

export const API_KEYS_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'api_key.created', description: 'api-keys.webhookEvent.created', from: 'api_key.created', order: 700, payload: (event) => facts({ ...keyFacts(event), roles: publicRoles(detailOf(event, 'roles')), scopes: publicCodes(detailOf(event, 'scopes')), actorUserId: actorOf(event) }) },
  { type: 'api_key.revoked', description: 'api-keys.webhookEvent.revoked', from: 'api_key.revoked', order: 710, payload: (event) => facts({ ...keyFacts(event), actorUserId: actorOf(event) }) },
  { type: 'api_key.use_failed', description: 'api-keys.webhookEvent.useFailed', from: 'api_key.use_failed', order: 720, payload: (event) => facts({ ...keyFacts(event), reason: publicCode(event.reason) }) },
];
