/**
 * SSO on the pages: the sign-in page's "Continue with SSO" section (shown once any connection
 * exists), which posts the address to `POST /sso/discover`: an address in a verified domain of an
 * organization with a connection goes to that connection's page (`GET /sso/:connectionId`), whose
 * button starts the sign-in at the IdP (the page's CSP lets that form's redirect reach the IdP);
 * any other address gets a page saying there is none. The connection's page is also a link an
 * organization may hand its people.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { toSafeLocalPath } from '../http/safe-redirect.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';
import { normaliseEmail } from '../users/email.ts';
import type { PageSection } from '../module.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import type { SsoService } from './sso.service.ts';
import type { Connection } from './sso.model.ts';

interface SsoPages {
  'sso-signin-section': { callbackUrl: string };
  'sso-continue': { callbackUrl: string; email: string | null; connection: { id: string; organization: string } | null };
}

const renderer = () => createPageRenderer<SsoPages>(templatesIn(join(import.meta.dirname, 'templates')));

export function ssoPageSections(sso: SsoService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'signin',
      async render({ page, callbackUrl }) {
        if ((await sso.connections.count()) === 0) return null;
        return pages.html(page, 'sso-signin-section', { title: '', callbackUrl: callbackUrl ?? HUB_PAGES.dashboard });
      },
    },
  ];
}

export interface SsoPageRouteOptions {
  sso: SsoService;
  organizations: OrganizationsService;
  config: Config;
}

/** Where the connection's sign-in form ends up: the IdP's origin, for the page's CSP `form-action`. */
function idpOrigins(connection: Connection): string[] {
  const url = connection.settings.saml?.idpSsoUrl ?? connection.settings.oidc?.issuer;
  try {
    return url === undefined ? [] : [new URL(url).origin];
  } catch {
    return [];
  }
}

export const ssoPageRoutes: FastifyPluginAsyncZod<SsoPageRouteOptions> = async (app, { sso, organizations, config }) => {
  const pages = renderer();
  const origin = new URL(config.authUrl).origin;
  const forAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };
  const hidden = { hide: true, tags: ['sso'] };

  app.post(
    '/sso/discover',
    {
      config: { ...forAnyone, formErrorPage: HUB_PAGES.signIn },
      schema: { ...hidden, body: z.object({ email: z.string().max(1000), callbackUrl: z.string().max(2048).optional(), csrfToken: z.string().max(200).optional() }) },
    },
    async (request, reply) => {
      const callbackUrl = toSafeLocalPath(request.body.callbackUrl, origin, HUB_PAGES.dashboard);
      const email = normaliseEmail(request.body.email);
      const connection = email.includes('@') ? await sso.connectionForEmail(email) : null;
      if (connection !== null) return reply.redirect(`/sso/${connection.id}?${new URLSearchParams({ callbackUrl })}`, 303);
      return pages.send(reply, 'sso-continue', { title: reply.page.i18n.t('sso.continue.title'), callbackUrl, email: email.slice(0, 254), connection: null }, { status: 404 });
    },
  );

  app.get(
    '/sso/:connectionId',
    { config: forAnyone, schema: { ...hidden, params: z.object({ connectionId: z.string().min(1).max(64) }), querystring: z.object({ callbackUrl: z.string().max(2048).optional() }) } },
    async (request, reply) => {
      const callbackUrl = toSafeLocalPath(request.query.callbackUrl, origin, HUB_PAGES.dashboard);
      const connection = await sso.connections.get(request.params.connectionId);
      const organization = connection === null ? null : await organizations.get(connection.organizationId, OPERATOR);
      const title = reply.page.i18n.t('sso.continue.title');
      if (connection === null || organization === null) return pages.send(reply, 'sso-continue', { title, callbackUrl, email: null, connection: null }, { status: 404 });
      return pages.send(reply, 'sso-continue', { title, callbackUrl, email: null, connection: { id: connection.id, organization: organization.organization.name } }, { formActionOrigins: idpOrigins(connection) });
    },
  );
};
