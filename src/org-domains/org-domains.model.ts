/** What the org-domains module deals in: its views, outcomes and the mapping from its rows. No I/O. */
import { domainToUnicode } from 'node:url';
import type { DomainRow } from './org-domains.store.ts';
import { challengeOf, type Challenge, type VerificationMethod } from './domain-challenge.ts';
import type { OrgDomainsConfig } from './org-domains.config.ts';

/** An organization may claim this many domains. */
export const MAX_DOMAINS_PER_ORGANIZATION = 50;

/** What discovery answers (`findVerified`, `findVerifiedForEmail`): the organization that proved the domain. */
export interface VerifiedDomain {
  readonly organizationId: string;
  /** Lower-case ASCII (punycode for an internationalised name). */
  readonly domain: string;
  /** Epoch ms. */
  readonly verifiedAt: number;
}

export interface DomainView {
  id: string;
  organizationId: string;
  /** Lower-case ASCII (punycode), as stored and compared. */
  domain: string;
  /** The same in Unicode, for people (`bücher.example`). */
  displayName: string;
  status: 'pending' | 'verified';
  createdAt: number;
  verifiedAt: number | null;
  verifiedMethod: VerificationMethod | null;
  lastCheckedAt: number | null;
  /** The code of the last failed check (DOMAIN_RECORD_NOT_FOUND…), null once verified. */
  lastFailure: string | null;
  /** What to publish to prove it. */
  challenge: Challenge;
}

export type AccessRefusal = 'ORGANIZATION_NOT_FOUND' | 'ORGANIZATION_ROLE_REQUIRED';
export type AddRefusal = AccessRefusal | 'DOMAIN_INVALID' | 'DOMAIN_ALREADY_ADDED' | 'DOMAIN_LIMIT_REACHED';
export type VerifyRefusal =
  | AccessRefusal
  | 'DOMAIN_NOT_FOUND'
  | 'DOMAIN_METHOD_UNAVAILABLE'
  | 'DOMAIN_CLAIMED_ELSEWHERE'
  | 'DOMAIN_RECORD_NOT_FOUND'
  | 'DOMAIN_RECORD_MISMATCH'
  | 'DOMAIN_CHECK_FAILED'
  | 'RATE_LIMITED';

export type AddResult = { ok: true; domain: DomainView } | { ok: false; reason: AddRefusal };
export type VerifyResult = { ok: true; domain: DomainView } | { ok: false; reason: VerifyRefusal; retryAfterSeconds?: number; domain?: DomainView };
export type RemoveResult = { ok: true; domain: DomainView } | { ok: false; reason: AccessRefusal | 'DOMAIN_NOT_FOUND' };

export function toView(row: DomainRow, config: Pick<OrgDomainsConfig, 'httpCheck'>): DomainView {
  return {
    id: row.id,
    organizationId: row.organization_id,
    domain: row.domain,
    displayName: domainToUnicode(row.domain) || row.domain,
    status: row.verified_at === null ? 'pending' : 'verified',
    createdAt: Number(row.created_at),
    verifiedAt: row.verified_at === null ? null : Number(row.verified_at),
    verifiedMethod: row.verified_method === 'dns' || row.verified_method === 'http' ? row.verified_method : null,
    lastCheckedAt: row.last_checked_at === null ? null : Number(row.last_checked_at),
    lastFailure: row.verified_at === null ? row.last_failure : null,
    challenge: challengeOf(row.domain, row.token, config),
  };
}

/** What the audit log and webhooks get of a domain: ids, the domain, the method; never the token. */
export function detailsOf(row: Pick<DomainRow, 'id' | 'organization_id' | 'domain'>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { organizationId: row.organization_id, domainId: row.id, domain: row.domain, ...extra };
}
