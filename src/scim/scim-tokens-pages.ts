/**
 * SCIM tokens on the organization's page (no script; forms with CSRF tokens):
 * - the **SCIM provisioning** section (`organization` slot), for its OWNERs and ADMINs: each token
 *   with its name, when it was made and last used, Rotate and Revoke buttons, and a form to create one;
 * - `POST /organizations/:id/scim-tokens` and `…/scim-tokens/rotate` answer with a page that shows
 *   the new token once (with the SCIM base URL); `…/scim-tokens/revoke` goes back to the page.
 * Creating and rotating need a recent second factor, as over the API.
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
import { ADMIN, OWNER } from '../organizations/organizations.model.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import type { ScimTokensService } from './scim-tokens.service.ts';
import { SCIM_BASE_PATH } from './scim.routes.ts';

const SECTION_ANCHOR = '#scim-tokens-heading';

interface TokenRow {
  id: string;
  name: string | null;
  createdAt: TimeText;
  lastUsedAt: TimeText | null;
  isRevoked: boolean;
}

interface ScimPages {
  'scim-tokens-section': { rows: TokenRow[]; base: string };
  'scim-token-issued': { token: string; baseUrl: string; back: string };
}

const renderer = () => createPageRenderer<ScimPages>(templatesIn(join(import.meta.dirname, 'templates')));

/** The organization, when `userId` manages its SCIM (an OWNER or ADMIN there); null otherwise. */
async function managedBy(organizations: OrganizationsService, organizationId: string, userId: string): Promise<'ORGANIZATION_NOT_FOUND' | 'ORGANIZATION_ROLE_REQUIRED' | null> {
  const found = await organizations.get(organizationId, { userId });
  if (found === null) return 'ORGANIZATION_NOT_FOUND';
  return found.role === OWNER || found.role === ADMIN ? null : 'ORGANIZATION_ROLE_REQUIRED';
}

export function scimTokenSections({ scimTokens, organizations }: { scimTokens: ScimTokensService; organizations: OrganizationsService }): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'organization',
      async render({ userId, organizationId, page }) {
        if (userId === null || organizationId === undefined) return null;
        if ((await managedBy(organizations, organizationId, userId)) !== null) return null;
        const { locale } = page.i18n;
        const rows = (await scimTokens.list(organizationId)).map((token) => ({
          id: token.id,
          name: token.name,
          createdAt: formatTime(token.createdAt, locale),
          lastUsedAt: token.lastUsedAt === null ? null : formatTime(token.lastUsedAt, locale),
          isRevoked: token.revokedAt !== null,
        }));
        return pages.html(page, 'scim-tokens-section', { title: '', rows, base: `${organizationPage(organizationId)}/scim-tokens` });
      },
    },
  ];
}

const csrfToken = z.string().max(200).optional();
const params = z.object({ id: z.string().min(1).max(64) });
const tokenForm = z.object({ tokenId: z.string().min(1).max(64), csrfToken });

export const scimTokenPageRoutes: FastifyPluginAsyncZod<{ scimTokens: ScimTokensService; organizations: OrganizationsService; authUrl: string }> = async (app, { scimTokens, organizations, authUrl }) => {
  const pages = renderer();
  const { read, change, back } = organizationSectionForms(SECTION_ANCHOR);
  const hidden = { hide: true } as const;

  /** The caller's source, once they are found to manage the organization's SCIM. */
  async function manager(request: FastifyRequest<{ Params: { id: string } }>) {
    const auth = signedIn(request);
    const refusal = await managedBy(organizations, request.params.id, auth.userId);
    if (refusal !== null) throw new AppError(refusal);
    return requestSource(request, auth.userId);
  }

  const issued = (reply: Parameters<typeof pages.send>[0], token: string, organizationId: string) =>
    pages.send(reply, 'scim-token-issued', { title: reply.page.i18n.t('scim.tokens.issuedTitle'), token, baseUrl: `${authUrl}${SCIM_BASE_PATH}`, back: back(organizationId) });

  app.post('/organizations/:id/scim-tokens', { config: change, schema: { ...hidden, params, body: z.object({ name: z.string().max(200).optional(), csrfToken }) } }, async (request, reply) => {
    const source = await manager(request);
    const name = request.body.name?.trim();
    const created = await scimTokens.create(request.params.id, name === undefined || name === '' ? null : name, source);
    if (!created.ok) throw new AppError(created.reason as ErrorCode);
    return issued(reply, created.token, request.params.id);
  });

  app.post('/organizations/:id/scim-tokens/rotate', { config: change, schema: { ...hidden, params, body: tokenForm } }, async (request, reply) => {
    const source = await manager(request);
    const rotated = await scimTokens.rotate(request.params.id, request.body.tokenId, source);
    if (!rotated.ok) throw new AppError(rotated.reason as ErrorCode);
    return issued(reply, rotated.token, request.params.id);
  });

  app.post('/organizations/:id/scim-tokens/revoke', { config: read, schema: { ...hidden, params, body: tokenForm } }, async (request, reply) => {
    const source = await manager(request);
    if (!(await scimTokens.revoke(request.params.id, request.body.tokenId, source))) throw new AppError('SCIM_TOKEN_NOT_FOUND');
    return reply.redirect(back(request.params.id), 303);
  });
};
