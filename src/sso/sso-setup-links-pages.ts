/**
 * Setup links on the organization's page (no script; forms with CSRF tokens):
 * - the **Single sign-on setup links** section (`organization` slot), for its OWNERs: each link
 *   with its state and a Revoke button, and a form to create one;
 * - `POST /organizations/:id/sso-setup-links` answers with a page that shows the new link once;
 * - `POST /organizations/:id/sso-setup-links/revoke` goes back to the organization's page.
 * Creating a link (a credential) needs a recent second factor, as over the API.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PageSection } from '../module.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { organizationPagePath as organizationPage, organizationSectionForms } from '../organizations/organization-section-forms.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import type { SsoService } from './sso.service.ts';
import { SETUP_LINK_DEFAULT_DAYS, SETUP_LINK_MAX_DAYS } from './sso-setup.service.ts';

const SECTION_ANCHOR = '#sso-setup-links-heading';

interface LinkRow {
  id: string;
  status: 'active' | 'expired' | 'revoked';
  createdAt: TimeText;
  expiresAt: TimeText;
}

interface LinkPages {
  'sso-setup-links-section': { rows: LinkRow[]; base: string; defaultDays: number; maxDays: number };
  'sso-setup-link-created': { url: string; back: string };
}

const renderer = () => createPageRenderer<LinkPages>(templatesIn(join(import.meta.dirname, 'templates')));

export function ssoSetupLinkSections(sso: SsoService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'organization',
      async render({ userId, organizationId, page }) {
        if (userId === null || organizationId === undefined) return null;
        // Not its OWNER: no section.
        const listed = await sso.setup.list(organizationId, { userId });
        if (!listed.ok) return null;
        const rows = listed.links.map((link) => ({ id: link.id, status: link.status, createdAt: formatTime(link.createdAt, page.i18n.locale), expiresAt: formatTime(link.expiresAt, page.i18n.locale) }));
        return pages.html(page, 'sso-setup-links-section', { title: '', rows, base: `${organizationPage(organizationId)}/sso-setup-links`, defaultDays: SETUP_LINK_DEFAULT_DAYS, maxDays: SETUP_LINK_MAX_DAYS });
      },
    },
  ];
}

const csrfToken = z.string().max(200).optional();
const params = z.object({ id: z.string().min(1).max(64) });

export const ssoSetupLinkPageRoutes: FastifyPluginAsyncZod<{ sso: SsoService }> = async (app, { sso }) => {
  const pages = renderer();
  const { read, change, back } = organizationSectionForms(SECTION_ANCHOR);
  const hidden = { hide: true } as const;

  app.post(
    '/organizations/:id/sso-setup-links',
    { config: change, schema: { ...hidden, params, body: z.object({ days: z.coerce.number().int().min(1).max(SETUP_LINK_MAX_DAYS).optional(), csrfToken }) } },
    async (request, reply) => {
      const auth = signedIn(request);
      const created = await sso.setup.create(request.params.id, { expiresInDays: request.body.days }, { userId: auth.userId }, requestSource(request, auth.userId));
      if (!created.ok) throw new AppError(created.reason as ErrorCode);
      return pages.send(reply, 'sso-setup-link-created', { title: reply.page.i18n.t('sso.links.createdTitle'), url: created.url, back: back(request.params.id) });
    },
  );

  app.post('/organizations/:id/sso-setup-links/revoke', { config: read, schema: { ...hidden, params, body: z.object({ linkId: z.string().min(1).max(64), csrfToken }) } }, async (request, reply) => {
    const auth = signedIn(request);
    const revoked = await sso.setup.revoke(request.params.id, request.body.linkId, { userId: auth.userId }, requestSource(request, auth.userId));
    if (!revoked.ok) throw new AppError(revoked.reason as ErrorCode);
    return reply.redirect(back(request.params.id), 303);
  });
};
