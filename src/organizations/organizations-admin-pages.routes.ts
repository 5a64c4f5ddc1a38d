/**
 * `/admin/organizations`: the administrators' pages of organizations, in the admin area's frame and
 * the page's language:
 * the list with a search, one organization with its members, the sections other modules add
 * (`admin-organization`: SSO setup links, say) and a Delete button. ADMIN only (the
 * prefix rules refuse `/admin/**` to everyone else; each route declares it too). Hidden from the
 * OpenAPI document; CSRF is checked for the form post before the handler runs.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { templatesIn } from '../web/render.ts';
import { createAdminPageRenderer } from '../admin/admin-area.ts';
import { renderPageSections, type AdminNavEntry, type PageSection } from '../module.ts';
import { queryText, shownCode } from '../web/page-query.ts';
import { decodeCursor, encodeCursor } from '../lib/keyset-cursor.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { OPERATOR, type OrganizationsService } from './organizations.service.ts';
import { organizationAlerts, roleLabel, type PageAlert } from './organizations-pages.messages.ts';

export const ADMIN_ORGANIZATIONS_PAGE = '/admin/organizations';
const adminOrganizationPage = (id: string) => `${ADMIN_ORGANIZATIONS_PAGE}/${encodeURIComponent(id)}`;

interface AdminFrame {
  section: 'organizations';
  alerts: PageAlert[];
}

interface AdminOrganizationPages {
  'admin-organizations': AdminFrame & {
    query: string;
    organizations: Array<{ href: string; name: string; slug: string; memberCount: number; createdAt: TimeText }>;
    /** The next page of the same search, when there is one; the first, when this is not it. */
    nextHref: string | null;
    firstHref: string | null;
  };
  'admin-organization': AdminFrame & {
    csrfToken: string;
    organization: { id: string; name: string; slug: string; createdAt: TimeText };
    members: Array<{ href: string; name: string; email: string; roleLabel: string; joinedAt: TimeText }>;
    /** The sections other modules add (their own HTML), before the delete form. */
    sections: string[];
    scripts: string[];
    deleteAction: string;
  };
}

export const adminOrganizationPageRoutes: FastifyPluginAsyncZod<{ organizations: OrganizationsService; adminNav: readonly AdminNavEntry[]; sections: readonly PageSection[] }> = async (app, { organizations, adminNav, sections }) => {
  const pages = createAdminPageRenderer<AdminOrganizationPages>(
    templatesIn(join(import.meta.dirname, 'templates')).filter((file) => file.includes('admin-organization')),
    adminNav,
  );
  const forAdmins = { access: access.role(ADMIN_ROLE) };
  const hidden = { hide: true } as const;
  const toList = (query: Record<string, string>) => `${ADMIN_ORGANIZATIONS_PAGE}?${new URLSearchParams(query)}`;
  /** Organizations a page of the list shows. */
  const PAGE_SIZE = 100;

  app.get(ADMIN_ORGANIZATIONS_PAGE, { config: forAdmins, schema: { ...hidden, querystring: z.object({ query: queryText(200), cursor: queryText(200), notice: shownCode, error: shownCode }) } }, async (request, reply) => {
    const { query, cursor } = request.query;
    // A cursor that is not one of ours (edited, truncated) shows the first page.
    const before = cursor === undefined ? null : decodeCursor(cursor);
    const page = await organizations.listPage({ query, ...(before !== null && { before }), limit: PAGE_SIZE });
    const kept: Record<string, string> = query === undefined || query === '' ? {} : { query };
    const { i18n } = reply.page;
    return pages.send(reply, 'admin-organizations', {
      title: i18n.t('organizations.admin.title'),
      isFull: true,
      section: 'organizations',
      alerts: organizationAlerts(request.query, i18n, 'admin'),
      query: request.query.query ?? '',
      nextHref: page.next === null ? null : toList({ ...kept, cursor: encodeCursor(page.next) }),
      firstHref: before === null ? null : toList(kept),
      organizations: page.organizations.map((organization) => ({ href: adminOrganizationPage(organization.id), name: organization.name, slug: organization.slug, memberCount: organization.memberCount, createdAt: formatTime(organization.createdAt, i18n.locale) })),
    });
  });

  app.get(`${ADMIN_ORGANIZATIONS_PAGE}/:id`, { config: forAdmins, schema: { ...hidden, params: z.object({ id: z.string().min(1).max(64) }), querystring: z.object({ notice: shownCode, error: shownCode }) } }, async (request, reply) => {
    const organization = await organizations.find(request.params.id);
    if (organization === null) return reply.redirect(toList({ error: 'ORGANIZATION_NOT_FOUND' }), 303);
    const members = (await organizations.listMembers(organization.id, OPERATOR)) ?? [];
    const { i18n } = reply.page;
    const added = await renderPageSections(sections, { userId: null, organizationId: organization.id, page: reply.page });
    return pages.send(reply, 'admin-organization', {
      title: organization.name,
      isWide: true,
      section: 'organizations',
      alerts: organizationAlerts(request.query, i18n, 'admin'),
      organization: { id: organization.id, name: organization.name, slug: organization.slug, createdAt: formatTime(organization.createdAt, i18n.locale) },
      members: members.map((member) => ({ href: `/admin/users/${encodeURIComponent(member.userId)}`, name: member.name, email: member.email, roleLabel: roleLabel(member.role, i18n), joinedAt: formatTime(member.joinedAt, i18n.locale) })),
      sections: added.html,
      scripts: added.scripts,
      deleteAction: `${adminOrganizationPage(organization.id)}/delete`,
    });
  });

  app.post(
    `${ADMIN_ORGANIZATIONS_PAGE}/:id/delete`,
    { config: { ...forAdmins, formErrorPage: ADMIN_ORGANIZATIONS_PAGE }, schema: { ...hidden, params: z.object({ id: z.string().min(1).max(64) }), body: z.object({ csrfToken: z.string().max(200).optional() }).optional() } },
    async (request, reply) => {
      const result = await organizations.delete(request.params.id, OPERATOR, requestSource(request, signedIn(request).userId));
      return reply.redirect(toList(result.ok ? { notice: 'ORGANIZATION_DELETED' } : { error: 'ORGANIZATION_NOT_FOUND' }), 303);
    },
  );
};
