/** The public events (webhooks) made from this module's domain events: ids, the domain, the method and reason codes; never the token. */
import { actorOf, detailOf, facts, publicCode, publicId, type PublicEventType } from '../audit/public-events.ts';
import type { AuditEvent } from '../audit/audit.service.ts';

const domainFacts = (event: AuditEvent) => ({
  organizationId: publicId(detailOf(event, 'organizationId')),
  domainId: publicId(detailOf(event, 'domainId')),
  domain: publicCode(detailOf(event, 'domain')),
  actorUserId: actorOf(event),
});

export const ORG_DOMAINS_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'organization.domain.added', description: 'org-domains.webhookEvent.added', from: 'org_domain.added', order: 640, payload: (event) => facts(domainFacts(event)) },
  { type: 'organization.domain.verified', description: 'org-domains.webhookEvent.verified', from: 'org_domain.verified', order: 641, payload: (event) => facts({ ...domainFacts(event), method: publicCode(detailOf(event, 'method')) }) },
  { type: 'organization.domain.verification_failed', description: 'org-domains.webhookEvent.verificationFailed', from: 'org_domain.verification_failed', order: 642, payload: (event) => facts({ ...domainFacts(event), method: publicCode(detailOf(event, 'method')), reason: publicCode(event.reason) }) },
  { type: 'organization.domain.removed', description: 'org-domains.webhookEvent.removed', from: 'org_domain.removed', order: 643, payload: (event) => facts(domainFacts(event)) },
];
