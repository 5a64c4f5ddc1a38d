/**
 * Organization domains on the hosted pages (no script; forms with CSRF tokens):
 * - the organization page's **Domains** section (`organization` slot), for its OWNERs and ADMINs:
 *   each domain with its state, the TXT record (and well-known file) to publish while pending,
 *   Verify and Remove buttons, and a form to add one;
 * - `POST /organizations/:id/domains` (add; back to the page, which shows the record),
 *   `…/domains/verify` (answered with a page saying whether it worked, and why not),
 *   `…/domains/remove` (back to the page).
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { BuiltServices, PageSection } from '../module.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { organizationPagePath as organizationPage, organizationSectionForms } from '../organizations/organization-section-forms.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import type { OrgDomainsService } from './org-domains.service.ts';
import type { Challenge } from './domain-challenge.ts';
import { MAX_DOMAIN_LENGTH } from './domain-name.ts';

const SECTION_ANCHOR = '#domains-heading';

interface DomainRow {
  id: string;
  name: string;
  isVerified: boolean;
  verifiedAt: TimeText | null;
  method: string | null;
  lastFailure: string | null;
  challenge: Challenge;
}

interface DomainPages {
  'org-domains-section': { csrfToken: string; rows: DomainRow[]; base: string; maxLength: number };
  'org-domain-result': { ok: boolean; message: string; code: string | null; back: string; challenge: Challenge | null };
}

const renderer = () => createPageRenderer<DomainPages>(templatesIn(join(import.meta.dirname, 'templates')));

export function orgDomainPageSections({ orgDomains }: Pick<BuiltServices, 'orgDomains'>): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'organization',
      async render({ userId, organizationId, page }) {
        if (userId === null || organizationId === undefined) return null;
        // Refused (not an OWNER or ADMIN there): no section.
        const listed = await orgDomains.list(organizationId, { userId });
        if (!listed.ok) return null;
        const rows = listed.domains.map((domain) => ({
          id: domain.id,
          name: domain.displayName === domain.domain ? domain.domain : `${domain.displayName} (${domain.domain})`,
          isVerified: domain.status === 'verified',
          verifiedAt: domain.verifiedAt === null ? null : formatTime(domain.verifiedAt, page.i18n.locale),
          method: domain.verifiedMethod,
          lastFailure: domain.lastFailure,
          challenge: domain.challenge,
        }));
        return pages.html(page, 'org-domains-section', { title: '', rows, base: `${organizationPage(organizationId)}/domains`, maxLength: MAX_DOMAIN_LENGTH });
      },
    },
  ];
}

const csrfToken = z.string().max(200).optional();
const params = z.object({ id: z.string().min(1).max(64) });
const addForm = z.object({ domain: z.string().max(MAX_DOMAIN_LENGTH * 4).optional(), csrfToken });
const domainForm = z.object({ domainId: z.string().min(1).max(64), method: z.string().max(10).optional(), csrfToken });
const hidden = { hide: true } as const;
/** The codes the result page explains in words of its own (`org-domains.error.<CODE>`); others get the general text and their code. */
const SHOWN_ERRORS: ReadonlySet<string> = new Set([
  'DOMAIN_INVALID',
  'DOMAIN_NOT_FOUND',
  'DOMAIN_ALREADY_ADDED',
  'DOMAIN_LIMIT_REACHED',
  'DOMAIN_CLAIMED_ELSEWHERE',
  'DOMAIN_RECORD_NOT_FOUND',
  'DOMAIN_RECORD_MISMATCH',
  'DOMAIN_CHECK_FAILED',
  'DOMAIN_METHOD_UNAVAILABLE',
  'ORGANIZATION_NOT_FOUND',
  'ORGANIZATION_ROLE_REQUIRED',
  'RATE_LIMITED',
]);

export const orgDomainPageRoutes: FastifyPluginAsyncZod<{ orgDomains: OrgDomainsService }> = async (app, { orgDomains }) => {
  const pages = renderer();
  // Signed out, a form post goes to sign in and back to the organization's page (its other forms do).
  const { read: config, back: sectionOf } = organizationSectionForms(SECTION_ANCHOR);
  const back = (request: FastifyRequest<{ Params: { id: string } }>) => sectionOf(request.params.id);
  const caller = (request: FastifyRequest) => {
    const auth = signedIn(request);
    return { actor: { userId: auth.userId }, source: requestSource(request, auth.userId) };
  };

  function refused(reply: FastifyReply, to: string, code: string, options: { retryAfterSeconds?: number | undefined; challenge?: Challenge } = {}) {
    const { i18n } = reply.page;
    const status = new AppError(code as ErrorCode).status;
    if (options.retryAfterSeconds !== undefined) reply.header('retry-after', String(options.retryAfterSeconds));
    const message = i18n.t(SHOWN_ERRORS.has(code) ? `org-domains.error.${code}` : 'org-domains.error.default');
    return pages.send(reply, 'org-domain-result', { title: i18n.t('org-domains.result.refusedTitle'), ok: false, message, code, back: to, challenge: options.challenge ?? null }, { status });
  }

  app.post('/organizations/:id/domains', { config, schema: { ...hidden, params, body: addForm } }, async (request, reply) => {
    const { actor, source } = caller(request);
    const result = await orgDomains.add(request.params.id, request.body.domain ?? '', actor, source);
    if (!result.ok) return refused(reply, back(request), result.reason);
    return reply.redirect(`${organizationPage(request.params.id)}#domain-${result.domain.id}`, 303);
  });

  app.post('/organizations/:id/domains/verify', { config, schema: { ...hidden, params, body: domainForm } }, async (request, reply) => {
    const { actor, source } = caller(request);
    const method = request.body.method === 'http' ? 'http' : 'dns';
    const result = await orgDomains.verify(request.params.id, request.body.domainId, actor, source, method);
    if (!result.ok) return refused(reply, back(request), result.reason, { retryAfterSeconds: result.retryAfterSeconds, ...(result.domain !== undefined && { challenge: result.domain.challenge }) });
    const { i18n } = reply.page;
    return pages.send(reply, 'org-domain-result', { title: i18n.t('org-domains.result.verifiedTitle'), ok: true, message: i18n.t('org-domains.result.verified', { domain: result.domain.displayName }), code: null, back: back(request), challenge: null });
  });

  app.post('/organizations/:id/domains/remove', { config, schema: { ...hidden, params, body: domainForm } }, async (request, reply) => {
    const { actor, source } = caller(request);
    const result = await orgDomains.remove(request.params.id, request.body.domainId, actor, source);
    if (!result.ok) return refused(reply, back(request), result.reason);
    return reply.redirect(back(request), 303);
  });
};
