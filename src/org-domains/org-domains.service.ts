/**
 * Organization domains: an organization's OWNER or ADMIN (or an operator: the admin API, the CLI)
 * claims a domain, publishes the record it is given and asks for verification; once verified the
 * domain is the organization's (one organization at most: the unique `verified_domain`), which is
 * what discovery (`findVerified`, `findVerifiedForEmail`) answers, e.g. for enterprise sign-in.
 * Every change is audited in its transaction (`org_domain.added|verified|removed|verification_failed`)
 * with ids, the domain and codes: never the token. Verification attempts are rate-limited per
 * organization (RATE_LIMIT_DOMAIN_VERIFY).
 */
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { Db } from '../storage/database.ts';
import type { RateLimiters } from '../http/rate-limit.ts';
import { randomId, randomSecret } from '../lib/random.ts';
import { ADMIN, OWNER, isOperator, type Actor, type OrganizationsService } from '../organizations/organizations.service.ts';
import type { OrgDomainsConfig } from './org-domains.config.ts';
import type { DomainChecker, VerificationMethod } from './domain-checks.ts';
import { domainOfEmail, normaliseDomain } from './domain-name.ts';
import * as store from './org-domains.store.ts';
import { MAX_DOMAINS_PER_ORGANIZATION, detailsOf, toView, type AccessRefusal, type AddResult, type DomainView, type RemoveResult, type VerifiedDomain, type VerifyRefusal, type VerifyResult } from './org-domains.model.ts';

export type OrgDomainsService = ReturnType<typeof createOrgDomainsService>;

export function createOrgDomainsService(deps: { db: Db; clock: Clock; audit: AuditService; organizations: OrganizationsService; rateLimiters: RateLimiters; checker: DomainChecker; config: OrgDomainsConfig }) {
  const { db, clock, audit, organizations, checker, config } = deps;
  const verifyLimiter = deps.rateLimiters.create('domain-verify', config.verifyPerOrganization);
  const view = (row: store.DomainRow) => toView(row, config);

  /** Null when `actor` may manage the organization's domains (an operator, its OWNER or ADMIN); else why not. */
  async function refusalFor(organizationId: string, actor: Actor): Promise<AccessRefusal | null> {
    const found = await organizations.get(organizationId, actor);
    if (found === null) return 'ORGANIZATION_NOT_FOUND';
    if (isOperator(actor) || found.role === OWNER || found.role === ADMIN) return null;
    return 'ORGANIZATION_ROLE_REQUIRED';
  }

  function toVerified(row: store.DomainRow): VerifiedDomain {
    return { organizationId: row.organization_id, domain: row.domain, verifiedAt: Number(row.verified_at) };
  }

  async function failed(row: store.DomainRow, reason: VerifyRefusal, method: VerificationMethod, source: AuditSource): Promise<VerifyResult> {
    const now = clock();
    await db.transaction().execute(async (trx) => {
      await store.recordFailure(trx, row.id, now, reason);
      await audit.record({ type: 'org_domain.verification_failed', source, reason, details: detailsOf(row, { method }) }, { db: trx });
    });
    return { ok: false, reason, domain: view({ ...row, last_checked_at: now, last_failure: reason }) };
  }

  async function claimedElsewhere(row: store.DomainRow): Promise<boolean> {
    const holder = await store.findVerified(db, row.domain);
    return holder !== undefined && holder.id !== row.id;
  }

  return {
    /** The organization that verified `domain` (any case, Unicode or punycode), or null. One indexed read. */
    async findVerified(domain: string): Promise<VerifiedDomain | null> {
      const name = normaliseDomain(domain);
      if (name === null) return null;
      const row = await store.findVerified(db, name);
      return row === undefined ? null : toVerified(row);
    },

    /** The organization that verified the domain of `email` (the part after the last `@`), or null. */
    async findVerifiedForEmail(email: string): Promise<VerifiedDomain | null> {
      const name = domainOfEmail(email);
      if (name === null) return null;
      const row = await store.findVerified(db, name);
      return row === undefined ? null : toVerified(row);
    },

    /** The organization's domains by name; a refusal when `actor` may not manage them. */
    async list(organizationId: string, actor: Actor): Promise<{ ok: true; domains: DomainView[] } | { ok: false; reason: AccessRefusal }> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      return { ok: true, domains: (await store.listDomains(db, organizationId)).map(view) };
    },

    /** Every organization's domains (an operator's view: the CLI). */
    async listAll(): Promise<DomainView[]> {
      return (await store.listDomains(db, null)).map(view);
    },

    /** One of the organization's domains, by id or by name (an operator's lookup). */
    async find(organizationId: string, idOrName: string): Promise<DomainView | null> {
      const name = normaliseDomain(idOrName);
      const row = (await store.findDomain(db, organizationId, idOrName)) ?? (name === null ? undefined : await store.findByName(db, organizationId, name));
      return row === undefined ? null : view(row);
    },

    /** Claims `domain` for the organization, pending until verified; the record to publish is in the answer. */
    async add(organizationId: string, domain: string, actor: Actor, source: AuditSource): Promise<AddResult> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      const name = normaliseDomain(domain);
      if (name === null) return { ok: false, reason: 'DOMAIN_INVALID' };
      const adding = db.transaction().execute(async (trx): Promise<AddResult> => {
        if ((await store.findByName(trx, organizationId, name)) !== undefined) return { ok: false, reason: 'DOMAIN_ALREADY_ADDED' };
        if ((await store.countDomains(trx, organizationId)) >= MAX_DOMAINS_PER_ORGANIZATION) return { ok: false, reason: 'DOMAIN_LIMIT_REACHED' };
        const row: store.DomainRow = {
          id: randomId(),
          organization_id: organizationId,
          domain: name,
          token: randomSecret(24),
          created_by: isOperator(actor) ? null : actor.userId,
          created_at: clock(),
          verified_domain: null,
          verified_at: null,
          verified_method: null,
          last_checked_at: null,
          last_failure: null,
        };
        await store.insertDomain(trx, row);
        await audit.record({ type: 'org_domain.added', source, details: detailsOf(row) }, { db: trx });
        return { ok: true, domain: view(row) };
      });
      try {
        return await adding;
      } catch (error) {
        // The unique (organization, domain) index: the same claim made twice at once.
        if ((await store.findByName(db, organizationId, name)) !== undefined) return { ok: false, reason: 'DOMAIN_ALREADY_ADDED' };
        throw error;
      }
    },

    /**
     * Looks for the domain's record (`dns`, default) or well-known file (`http`) and, when it holds
     * the domain's value, marks the domain verified. Verifying a verified domain answers it as it is.
     * Refused while another organization holds the domain verified (DOMAIN_CLAIMED_ELSEWHERE).
     */
    async verify(organizationId: string, domainId: string, actor: Actor, source: AuditSource, method: VerificationMethod = 'dns'): Promise<VerifyResult> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      const row = await store.findDomain(db, organizationId, domainId);
      if (row === undefined) return { ok: false, reason: 'DOMAIN_NOT_FOUND' };
      if (row.verified_at !== null) return { ok: true, domain: view(row) };
      if (method === 'http' && !config.httpCheck) return { ok: false, reason: 'DOMAIN_METHOD_UNAVAILABLE' };
      const wait = await verifyLimiter.consume(organizationId);
      if (wait !== null) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: wait };
      if (await claimedElsewhere(row)) return failed(row, 'DOMAIN_CLAIMED_ELSEWHERE', method, source);
      const outcome = await checker.check(method, row.domain, row.token);
      if (!outcome.ok) return failed(row, outcome.reason, method, source);
      const now = clock();
      try {
        const verified = await db.transaction().execute(async (trx) => {
          if (!(await store.markVerified(trx, row.id, row.domain, now, method))) return false;
          await audit.record({ type: 'org_domain.verified', source, details: detailsOf(row, { method }) }, { db: trx });
          return true;
        });
        const current = await store.findDomain(db, organizationId, row.id);
        if (!verified || current === undefined) return current === undefined ? { ok: false, reason: 'DOMAIN_NOT_FOUND' } : { ok: true, domain: view(current) };
        return { ok: true, domain: view(current) };
      } catch (error) {
        // The unique index on verified domains: another organization verified it meanwhile.
        if (await claimedElsewhere(row)) return failed(row, 'DOMAIN_CLAIMED_ELSEWHERE', method, source);
        throw error;
      }
    },

    /** Removes the organization's claim, pending or verified (the domain is free for another organization then). */
    async remove(organizationId: string, domainId: string, actor: Actor, source: AuditSource): Promise<RemoveResult> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      return db.transaction().execute(async (trx): Promise<RemoveResult> => {
        const row = await store.findDomain(trx, organizationId, domainId);
        if (row === undefined || !(await store.deleteDomain(trx, row.id))) return { ok: false, reason: 'DOMAIN_NOT_FOUND' };
        await audit.record({ type: 'org_domain.removed', source, details: detailsOf(row, { wasVerified: row.verified_at !== null }) }, { db: trx });
        return { ok: true, domain: view(row) };
      });
    },
  };
}
