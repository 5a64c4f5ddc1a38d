/**
 * The JSON API of organization domains:
 * - `/api/organizations/:id/domains`: for the organization's OWNERs and ADMINs (the service checks
 *   the member's role: 403 ORGANIZATION_ROLE_REQUIRED): list, add (the record to publish is in
 *   the answer), verify (`{method: 'dns' | 'http'}`), remove;
 * - `/api/admin/organizations/:id/domains`: the same for administrators (ADMIN), on any organization.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { access, signedIn, type RouteAccess } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { OPERATOR, type Actor } from '../organizations/organizations.service.ts';
import type { OrgDomainsService } from './org-domains.service.ts';
import { METHODS } from './domain-challenge.ts';
import { MAX_DOMAIN_LENGTH } from './domain-name.ts';
import type { DomainView, VerifyResult } from './org-domains.model.ts';

const id = z.string().min(1).max(64);
const organizationParams = z.object({ id });
const domainParams = z.object({ id, domainId: id });
const addBody = z.object({ domain: z.string().min(1).max(MAX_DOMAIN_LENGTH * 4).describe('The domain, in Unicode or punycode (`bücher.example`, `xn--bcher-kva.example`)') });
const verifyBody = z.object({ method: z.enum(METHODS).optional().describe('`dns` (default): the TXT record; `http`: the well-known file') }).nullish();

export const domainBody = z
  .object({
    id: z.string(),
    organizationId: z.string(),
    domain: z.string().describe('Lower-case ASCII (punycode), as compared'),
    displayName: z.string().describe('The same in Unicode'),
    status: z.enum(['pending', 'verified']),
    createdAt: z.number().int(),
    verifiedAt: z.number().int().nullable(),
    verifiedMethod: z.enum(METHODS).nullable(),
    lastCheckedAt: z.number().int().nullable(),
    lastFailure: z.string().nullable().describe('The code of the last failed check, until verified'),
    challenge: z.object({
      recordName: z.string().describe('`_gatehouse-challenge.<domain>`'),
      recordType: z.literal('TXT'),
      recordValue: z.string().describe('`gatehouse-domain-verification=<token>`, exactly'),
      fileUrl: z.string().nullable().describe('Where the well-known file may be published instead (null when that method is off)'),
      fileContent: z.string().describe('What the file holds (the same line)'),
    }),
  })
  .meta({ id: 'OrganizationDomain' });

const toBody = (domain: DomainView) => domain;
const tags = ['organizations'];
const guarded = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Not an OWNER or ADMIN of the organization (ORGANIZATION_ROLE_REQUIRED), not an administrator (FORBIDDEN), or CSRF_FAILED'),
  404: errorResponse.describe('No such organization among yours (ORGANIZATION_NOT_FOUND), or no such domain in it (DOMAIN_NOT_FOUND)'),
};
const verifyErrors = {
  ...bodyErrorResponses,
  409: errorResponse.describe('Another organization has verified the domain (DOMAIN_CLAIMED_ELSEWHERE)'),
  422: errorResponse.describe('No record found (DOMAIN_RECORD_NOT_FOUND), records without the value (DOMAIN_RECORD_MISMATCH), the http method off (DOMAIN_METHOD_UNAVAILABLE), or VALIDATION_ERROR'),
  429: errorResponse.describe('Too many verification attempts for this organization (RATE_LIMITED), with Retry-After'),
  502: errorResponse.describe('The DNS or web server did not answer, or its address is not allowed (DOMAIN_CHECK_FAILED)'),
};

/** A refused verification as its error (RATE_LIMITED with its wait). */
export function verifyError(result: Extract<VerifyResult, { ok: false }>): AppError {
  return new AppError(result.reason, result.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: result.retryAfterSeconds });
}

export const orgDomainRoutes: FastifyPluginAsyncZod<{ orgDomains: OrgDomainsService }> = async (app, { orgDomains }) => {
  const routesAt = (base: string, who: (request: FastifyRequest) => Actor, config: { access: RouteAccess }, routeTags: string[], whom: string) => {
    const source = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);
    app.get(
      base,
      { config, schema: { tags: routeTags, summary: `List an organization’s domains (${whom})`, params: organizationParams, response: { 200: z.object({ domains: z.array(domainBody) }), ...guarded } } },
      async (request) => {
        const result = await orgDomains.list(request.params.id, who(request));
        if (!result.ok) throw new AppError(result.reason);
        return { domains: result.domains.map(toBody) };
      },
    );

    app.post(
      base,
      {
        config,
        schema: {
          tags: routeTags,
          summary: `Claim a domain for an organization (${whom})`,
          description: 'Pending until verified: the answer holds the TXT record to publish (and the well-known file, when offered). Audited as `org_domain.added`.',
          params: organizationParams,
          body: addBody,
          response: { 201: z.object({ domain: domainBody }), ...guarded, ...bodyErrorResponses, 409: errorResponse.describe('Added already (DOMAIN_ALREADY_ADDED), or too many domains (DOMAIN_LIMIT_REACHED)'), 422: errorResponse.describe('Not a domain that can be claimed (DOMAIN_INVALID), or VALIDATION_ERROR') },
        },
      },
      async (request, reply) => {
        const result = await orgDomains.add(request.params.id, request.body.domain, who(request), source(request));
        if (!result.ok) throw new AppError(result.reason);
        return reply.status(201).send({ domain: toBody(result.domain) });
      },
    );

    app.post(
      `${base}/:domainId/verify`,
      {
        config,
        schema: {
          tags: routeTags,
          summary: `Verify a claimed domain (${whom})`,
          description: 'Looks for the TXT record (or, with `method: "http"`, the well-known file) now. Audited as `org_domain.verified` or `org_domain.verification_failed`; rate-limited per organization (RATE_LIMIT_DOMAIN_VERIFY).',
          params: domainParams,
          body: verifyBody,
          response: { 200: z.object({ domain: domainBody }), ...guarded, ...verifyErrors },
        },
      },
      async (request) => {
        const result = await orgDomains.verify(request.params.id, request.params.domainId, who(request), source(request), request.body?.method ?? 'dns');
        if (!result.ok) throw verifyError(result);
        return { domain: toBody(result.domain) };
      },
    );

    app.delete(
      `${base}/:domainId`,
      { config, schema: { tags: routeTags, summary: `Remove a domain, pending or verified (${whom})`, description: 'Audited as `org_domain.removed`.', params: domainParams, response: { 200: z.object({ domain: domainBody }), ...guarded } } },
      async (request) => {
        const result = await orgDomains.remove(request.params.id, request.params.domainId, who(request), source(request));
        if (!result.ok) throw new AppError(result.reason);
        return { domain: toBody(result.domain) };
      },
    );
  };

  routesAt('/api/organizations/:id/domains', (request) => ({ userId: signedIn(request).userId }), { access: access.user() }, tags, 'its OWNERs and ADMINs');
  routesAt('/api/admin/organizations/:id/domains', () => OPERATOR, { access: access.role(ADMIN_ROLE) }, ['admin'], 'administrators');
};
