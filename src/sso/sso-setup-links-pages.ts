/**
 * Setup links on the organization's page (no script; forms with CSRF tokens):
 * - the **Single sign-on setup links** section (`organization` slot), for its OWNERs: each link
 *   with its state and a Revoke button, and a form to create one;
 * - `POST /organizations/:id/sso-setup-links` answers with a page that shows the new link once;
 * - `POST /organizations/:id/sso-setup-links/revoke` goes back to the organization's page.
 * And the same for administrators on the admin area's page of an organization (`admin-organization`
 * slot): its live links, each with a Revoke button, and the form, posting to
 * `/admin/organizations/:id/sso-setup-links[/revoke]` (ADMIN; acting as an operator, as the CLI
 * does, audited with the administrator as actor).
 * Creating a link (a credential) needs a recent second factor, as over the API.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AdminNavEntry, PageSection } from '../module.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { organizationPagePath as organizationPage, organizationSectionForms } from '../organizations/organization-section-forms.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { createAdminPageRenderer } from '../admin/admin-area.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import type { SsoService } from './sso.service.ts';
import type { SetupLink } from './sso-setup.service.ts';
import { SETUP_LINK_DEFAULT_DAYS, SETUP_LINK_MAX_DAYS } from './sso-setup.rules.ts';

const SECTION_ANCHOR = '#sso-setup-links-heading';
/** The administrators' page of an organization (organizations-admin-pages.routes.ts), and its forms' refusals' page. */
const ADMIN_ORGANIZATIONS_PAGE = '/admin/organizations';
const adminOrganizationPage = (id: string) => `${ADMIN_ORGANIZATIONS_PAGE}/${encodeURIComponent(id)}`;

interface LinkRow {
  id: string;
  status: 'active' | 'expired' | 'revoked';
  createdAt: TimeText;
  expiresAt: TimeText;
}

interface LinkPages {
  'sso-setup-links-section': { rows: LinkRow[]; base: string; defaultDays: number; maxDays: number; intro: string; none: string };
  'sso-setup-link-created': { url: string; back: string };
}

interface AdminLinkPages {
  'sso-setup-link-admin-created': { url: string; back: string; section: 'organizations'; alerts: [] };
}

const renderer = () => createPageRenderer<LinkPages>(templatesIn(join(import.meta.dirname, 'templates')));

function rowsOf(links: readonly SetupLink[], locale: string): LinkRow[] {
  return links.map((link) => ({ id: link.id, status: link.status, createdAt: formatTime(link.createdAt, locale), expiresAt: formatTime(link.expiresAt, locale) }));
}

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
        return pages.html(page, 'sso-setup-links-section', {
          title: '',
          rows: rowsOf(listed.links, page.i18n.locale),
          base: `${organizationPage(organizationId)}/sso-setup-links`,
          defaultDays: SETUP_LINK_DEFAULT_DAYS,
          maxDays: SETUP_LINK_MAX_DAYS,
          intro: page.i18n.t('sso.links.intro'),
          none: page.i18n.t('sso.links.none'),
        });
      },
    },
    {
      page: 'admin-organization',
      async render({ organizationId, page }) {
        if (organizationId === undefined) return null;
        const listed = await sso.setup.list(organizationId, OPERATOR);
        if (!listed.ok) return null;
        // The live ones: an administrator acts on those (the owner's section keeps the history).
        const live = listed.links.filter((link) => link.status === 'active');
        return pages.html(page, 'sso-setup-links-section', {
          title: '',
          rows: rowsOf(live, page.i18n.locale),
          base: `${adminOrganizationPage(organizationId)}/sso-setup-links`,
          defaultDays: SETUP_LINK_DEFAULT_DAYS,
          maxDays: SETUP_LINK_MAX_DAYS,
          intro: page.i18n.t('sso.links.adminIntro'),
          none: page.i18n.t('sso.links.noneLive'),
        });
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

/** The administrators' forms of the `admin-organization` section: create (the link shown once, in the admin area's frame) and revoke. */
export const ssoSetupLinkAdminPageRoutes: FastifyPluginAsyncZod<{ sso: SsoService; adminNav: readonly AdminNavEntry[] }> = async (app, { sso, adminNav }) => {
  const pages = createAdminPageRenderer<AdminLinkPages>(
    templatesIn(join(import.meta.dirname, 'templates')).filter((file) => file.includes('sso-setup-link-admin-')),
    adminNav,
  );
  const hidden = { hide: true } as const;
  const formErrorPage = ADMIN_ORGANIZATIONS_PAGE;
  const back = (organizationId: string) => `${adminOrganizationPage(organizationId)}${SECTION_ANCHOR}`;
  const source = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);

  app.post(
    `${ADMIN_ORGANIZATIONS_PAGE}/:id/sso-setup-links`,
    {
      config: { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }), formErrorPage },
      schema: { ...hidden, params, body: z.object({ days: z.coerce.number().int().min(1).max(SETUP_LINK_MAX_DAYS).optional(), csrfToken }) },
    },
    async (request, reply) => {
      const created = await sso.setup.create(request.params.id, { expiresInDays: request.body.days }, OPERATOR, source(request));
      if (!created.ok) throw new AppError(created.reason as ErrorCode);
      return pages.send(reply, 'sso-setup-link-admin-created', { title: reply.page.i18n.t('sso.links.createdTitle'), url: created.url, back: back(request.params.id), section: 'organizations', alerts: [] });
    },
  );

  app.post(
    `${ADMIN_ORGANIZATIONS_PAGE}/:id/sso-setup-links/revoke`,
    { config: { access: access.role(ADMIN_ROLE), formErrorPage }, schema: { ...hidden, params, body: z.object({ linkId: z.string().min(1).max(64), csrfToken }) } },
    async (request, reply) => {
      const revoked = await sso.setup.revoke(request.params.id, request.body.linkId, OPERATOR, source(request));
      if (!revoked.ok) throw new AppError(revoked.reason as ErrorCode);
      return reply.redirect(back(request.params.id), 303);
    },
  );
};
