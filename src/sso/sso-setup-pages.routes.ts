/**
 * The setup link's pages, for the organization's IT admin, without a Gatehouse account (the link is
 * the credential; sso-setup.service.ts):
 * - `GET /sso/setup?token=…` opens the link: the token goes into an HttpOnly cookie (the rest of the
 *   way never carries it in a URL) and the browser to `GET /sso/setup`, the guided page: (1) our SP
 *   values, (2) the IdP's metadata (XML or URL) or the OIDC client, (3) a test sign-in, (4) the
 *   domain's TXT record and a button to check it, (5) the SCIM token;
 * - `POST /sso/setup/connection` saves the connection (the sso service's, with the id the link reserved);
 * - `POST /sso/setup/test` starts a test sign-in at the IdP; its answer comes back to the ACS (or
 *   the OIDC callback), which sends the browser to `GET /sso/setup/tests/:testId`: what the IdP
 *   asserted, no session, nobody provisioned;
 * - `POST /sso/setup/domains` and `…/domains/verify` (the org-domains service's);
 * - `POST /sso/setup/scim-token` (the scim module's service): the token, shown this once.
 * Every request is judged by the link in its cookie alone (one organization, one connection), is
 * rate-limited per IP (RATE_LIMIT_SSO_SETUP), and posts carry the CSRF token like every form. A link
 * that is unknown, tampered with, expired or revoked gets a page saying so (404, 410), nothing else.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { baseCookieOptions } from '../http/cookies.ts';
import { clientKey, type Limiter } from '../http/rate-limit.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import type { OrgDomainsService } from '../org-domains/org-domains.service.ts';
import type { ScimTokensService } from '../scim/scim-tokens.service.ts';
import { oidcRedirectUri, samlEndpoints } from './sso-endpoints.ts';
import { ssoFlowCookie } from './sso.routes.ts';
import type { SetupTestOutcome, SsoService } from './sso.service.ts';
import type { SetupLink } from './sso-setup.service.ts';
import type { Connection } from './sso.model.ts';
import { SETUP_PAGE } from './sso-setup.paths.ts';

interface SetupDomain {
  id: string;
  name: string;
  isVerified: boolean;
  recordName: string;
  recordType: string;
  recordValue: string;
}

interface SetupPageModel {
  organization: string;
  expiresAt: TimeText;
  sp: { entityId: string; acsUrl: string; metadataUrl: string; redirectUri: string; signingCert: string | null; encryptionCert: string | null };
  connection: { protocol: 'saml' | 'oidc'; name: string; idp: string } | null;
  domains: SetupDomain[];
  notice: string | null;
  error: { code: string; message: string } | null;
  defaultName: string;
}

interface SetupPages {
  'sso-setup': SetupPageModel;
  'sso-setup-test': { outcome: SetupTestOutcome | null; isPending: boolean };
  'sso-setup-token': { token: string; baseUrl: string };
  'sso-setup-refused': { code: string; message: string; back: string | null };
}

export interface SsoSetupPageOptions {
  sso: SsoService;
  organizations: OrganizationsService;
  orgDomains: OrgDomainsService;
  scimTokens: ScimTokensService;
  limiter: Limiter;
  config: Config;
  clock: Clock;
  scimBasePath: string;
}

const NOTICES = new Set(['connection-saved', 'domain-added', 'domain-verified']);
const csrfToken = z.string().max(200).optional();
const hidden = { hide: true, tags: ['sso'] } as const;
const STEP = { metadata: '#setup-metadata', test: '#setup-test', domain: '#setup-domain', scim: '#setup-scim' } as const;

export function setupCookie(config: Pick<Config, 'isSecureOrigin'>): string {
  return `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.sso-setup`;
}

/** Where the test's form ends up (the IdP), for the page's CSP `form-action`. */
function idpOrigin(connection: Connection | null): string[] {
  const url = connection?.settings.saml?.idpSsoUrl ?? connection?.settings.oidc?.issuer;
  try {
    return url === undefined ? [] : [new URL(url).origin];
  } catch {
    return [];
  }
}

export const ssoSetupPageRoutes: FastifyPluginAsyncZod<SsoSetupPageOptions> = async (app, options) => {
  const { sso, organizations, orgDomains, scimTokens, limiter, config, clock } = options;
  const pages = createPageRenderer<SetupPages>(templatesIn(join(import.meta.dirname, 'templates')));
  const cookieName = setupCookie(config);
  const cookieOptions = baseCookieOptions(config);
  // Like every /sso route, reachable on the way to enrolling a second factor: the link is not the visitor's account.
  const routeConfig = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };

  function refused(reply: FastifyReply, code: string, back: string | null = null, retryAfterSeconds?: number) {
    const { i18n } = reply.page;
    if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
    const key = `sso.setup.error.${code}`;
    const known = i18n.t(key);
    const message = known === key ? i18n.t('sso.setup.error.default') : known;
    return pages.send(reply, 'sso-setup-refused', { title: i18n.t('sso.setup.refusedTitle'), code, message, back }, { status: new AppError(code as ErrorCode).status });
  }

  /** Every setup request: within the per-IP limit, with a link that works; else its refusal page is sent (and null returned). */
  async function linkOf(request: FastifyRequest, reply: FastifyReply, token?: string): Promise<SetupLink | null> {
    const wait = await limiter.consume(clientKey(request.ip));
    if (wait !== null) {
      void refused(reply, 'RATE_LIMITED', null, wait);
      return null;
    }
    const opened = await sso.setup.open(token ?? request.cookies[cookieName], requestSource(request, null), token !== undefined);
    if (!opened.ok) {
      if (token === undefined) void reply.clearCookie(cookieName, cookieOptions);
      void refused(reply, opened.reason);
      return null;
    }
    return opened.link;
  }

  const backTo = (step: string) => `${SETUP_PAGE}${step}`;

  async function sendSetupPage(reply: FastifyReply, link: SetupLink, extra: { notice?: string | null; error?: { code: string; message: string } | null; status?: number } = {}) {
    const { i18n } = reply.page;
    const [found, connection, listed] = await Promise.all([organizations.get(link.organizationId, OPERATOR), sso.connections.get(link.connectionId), orgDomains.list(link.organizationId, OPERATOR)]);
    // The link's connection is its organization's, or nothing: a link never reaches another organization's.
    const own = connection !== null && connection.organizationId === link.organizationId ? connection : null;
    const endpoints = samlEndpoints(config.authUrl, link.connectionId);
    const saml = own?.settings.saml;
    const model: SetupPageModel & { title: string } = {
      title: i18n.t('sso.setup.title'),
      organization: found?.organization.name ?? '',
      expiresAt: formatTime(link.expiresAt, i18n.locale),
      sp: { ...endpoints, redirectUri: oidcRedirectUri(config.authUrl, link.connectionId), signingCert: saml?.spSigningCert ?? null, encryptionCert: saml?.spEncryptionCert ?? null },
      connection: own === null ? null : { protocol: own.protocol, name: own.name, idp: own.settings.saml?.idpEntityId ?? own.settings.oidc?.issuer ?? '' },
      domains: listed.ok
        ? listed.domains.map((domain) => ({ id: domain.id, name: domain.displayName, isVerified: domain.status === 'verified', recordName: domain.challenge.recordName, recordType: domain.challenge.recordType, recordValue: domain.challenge.recordValue }))
        : [],
      notice: extra.notice === undefined || extra.notice === null ? null : i18n.t(`sso.setup.notice.${extra.notice}`),
      error: extra.error ?? null,
      defaultName: `${found?.organization.name ?? ''} SSO`.trim().slice(0, 200),
    };
    return pages.send(reply, 'sso-setup', model, { status: extra.status ?? 200, formActionOrigins: idpOrigin(own) });
  }

  function formError(reply: FastifyReply, code: string, message?: string) {
    const { i18n } = reply.page;
    const key = `sso.setup.error.${code}`;
    const known = i18n.t(key);
    return { code, message: message ?? (known === key ? i18n.t('sso.setup.error.default') : known) };
  }

  app.get(
    SETUP_PAGE,
    { config: routeConfig, schema: { ...hidden, querystring: z.object({ token: z.string().max(200).optional(), notice: z.string().max(40).optional() }) } },
    async (request, reply) => {
      const { token } = request.query;
      if (token !== undefined) {
        const link = await linkOf(request, reply, token);
        if (link === null) return reply;
        // The link's secret leaves the URL (history, screenshots, the Referer of the next page) for a cookie of this site only.
        const maxAge = Math.max(1, Math.floor((link.expiresAt - clock()) / 1000));
        void reply.setCookie(cookieName, token, { ...cookieOptions, maxAge: Math.min(maxAge, 86_400) });
        return reply.redirect(SETUP_PAGE, 303);
      }
      const link = await linkOf(request, reply);
      if (link === null) return reply;
      const notice = request.query.notice !== undefined && NOTICES.has(request.query.notice) ? request.query.notice : null;
      return sendSetupPage(reply, link, { notice });
    },
  );

  const connectionForm = z.object({
    protocol: z.enum(['saml', 'oidc']),
    name: z.string().max(400).optional(),
    idpMetadataXml: z.string().max(256 * 1024).optional(),
    idpMetadataUrl: z.string().max(2048).optional(),
    issuer: z.string().max(2048).optional(),
    clientId: z.string().max(512).optional(),
    clientSecret: z.string().max(2048).optional(),
    csrfToken,
  });
  const blank = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());

  app.post(SETUP_PAGE + '/connection', { config: routeConfig, bodyLimit: 300 * 1024, schema: { ...hidden, body: connectionForm } }, async (request, reply) => {
    const link = await linkOf(request, reply);
    if (link === null) return reply;
    const body = request.body;
    const source = requestSource(request, null);
    const existing = await sso.connections.get(link.connectionId);
    const metadata = { idpMetadataXml: blank(body.idpMetadataXml), idpMetadataUrl: blank(body.idpMetadataXml) === undefined ? blank(body.idpMetadataUrl) : undefined };
    const invalid = (message?: string) => sendSetupPage(reply, link, { error: formError(reply, 'SSO_INVALID_CONNECTION', message), status: 422 });
    if (metadata.idpMetadataUrl !== undefined && !URL.canParse(metadata.idpMetadataUrl)) return invalid();
    let result;
    if (existing !== null) {
      if (existing.organizationId !== link.organizationId) return refused(reply, 'SSO_SETUP_LINK_INVALID');
      if (existing.protocol !== body.protocol) return invalid(reply.page.i18n.t('sso.setup.error.protocolFixed'));
      const name = blank(body.name);
      result =
        body.protocol === 'saml'
          ? await sso.connections.update(existing.id, { ...(name !== undefined && { name }), ...metadata }, source)
          : await sso.connections.update(existing.id, { ...(name !== undefined && { name }), ...(blank(body.clientSecret) !== undefined && { clientSecret: blank(body.clientSecret) }) }, source);
    } else {
      const name = blank(body.name) ?? `SSO`;
      if (body.protocol === 'saml') {
        if (metadata.idpMetadataXml === undefined && metadata.idpMetadataUrl === undefined) return invalid();
        result = await sso.connections.create(link.organizationId, { protocol: 'saml', name: name.slice(0, 200), ...metadata }, source, { id: link.connectionId });
      } else {
        const issuer = blank(body.issuer);
        const clientId = blank(body.clientId);
        const clientSecret = blank(body.clientSecret);
        if (issuer === undefined || clientId === undefined || clientSecret === undefined || !URL.canParse(issuer)) return invalid();
        result = await sso.connections.create(link.organizationId, { protocol: 'oidc', name: name.slice(0, 200), issuer, clientId, clientSecret }, source, { id: link.connectionId });
      }
    }
    if (!result.ok) return result.reason === 'SSO_INVALID_CONNECTION' ? invalid(result.message) : refused(reply, result.reason);
    return reply.redirect(`${SETUP_PAGE}?notice=connection-saved${STEP.test}`, 303);
  });

  app.post(SETUP_PAGE + '/test', { config: routeConfig, schema: { ...hidden, body: z.object({ csrfToken }) } }, async (request, reply) => {
    const link = await linkOf(request, reply);
    if (link === null) return reply;
    const connection = await sso.connections.get(link.connectionId);
    if (connection === null || connection.organizationId !== link.organizationId) return sendSetupPage(reply, link, { error: formError(reply, 'SSO_CONNECTION_NOT_FOUND'), status: 409 });
    const testId = await sso.setup.startTest(link);
    const started = await sso.start(connection.id, SETUP_PAGE, requestSource(request, null), testId);
    if (!started.ok) return sendSetupPage(reply, link, { error: formError(reply, started.reason), status: 502 });
    if (started.browserBinding !== null) void reply.setCookie(ssoFlowCookie(config), started.browserBinding, { ...cookieOptions, maxAge: 600 });
    return reply.redirect(started.url, 303);
  });

  app.get(`${SETUP_PAGE}/tests/:testId`, { config: routeConfig, schema: { ...hidden, params: z.object({ testId: z.string().min(1).max(64) }) } }, async (request, reply) => {
    const link = await linkOf(request, reply);
    if (link === null) return reply;
    const result = await sso.setup.testResult(link, request.params.testId);
    if (result === null) return refused(reply, 'SSO_SETUP_TEST_NOT_FOUND', backTo(STEP.test));
    const { i18n } = reply.page;
    return pages.send(reply, 'sso-setup-test', { title: i18n.t('sso.setup.test.title'), outcome: result === 'pending' ? null : result, isPending: result === 'pending' });
  });

  app.post(SETUP_PAGE + '/domains', { config: routeConfig, schema: { ...hidden, body: z.object({ domain: z.string().max(1024).optional(), csrfToken }) } }, async (request, reply) => {
    const link = await linkOf(request, reply);
    if (link === null) return reply;
    const added = await orgDomains.add(link.organizationId, request.body.domain ?? '', OPERATOR, requestSource(request, null));
    if (!added.ok) return sendSetupPage(reply, link, { error: formError(reply, added.reason), status: new AppError(added.reason as ErrorCode).status });
    return reply.redirect(`${SETUP_PAGE}?notice=domain-added${STEP.domain}`, 303);
  });

  app.post(SETUP_PAGE + '/domains/verify', { config: routeConfig, schema: { ...hidden, body: z.object({ domainId: z.string().min(1).max(64), csrfToken }) } }, async (request, reply) => {
    const link = await linkOf(request, reply);
    if (link === null) return reply;
    // The org-domains service finds the domain within the link's organization only.
    const verified = await orgDomains.verify(link.organizationId, request.body.domainId, OPERATOR, requestSource(request, null), 'dns');
    if (!verified.ok) {
      if (verified.retryAfterSeconds !== undefined) reply.header('retry-after', String(verified.retryAfterSeconds));
      return sendSetupPage(reply, link, { error: formError(reply, verified.reason), status: new AppError(verified.reason as ErrorCode).status });
    }
    return reply.redirect(`${SETUP_PAGE}?notice=domain-verified${STEP.domain}`, 303);
  });

  app.post(SETUP_PAGE + '/scim-token', { config: routeConfig, schema: { ...hidden, body: z.object({ csrfToken }) } }, async (request, reply) => {
    const link = await linkOf(request, reply);
    if (link === null) return reply;
    const created = await scimTokens.create(link.organizationId, 'SSO setup link', requestSource(request, null));
    if (!created.ok) return sendSetupPage(reply, link, { error: formError(reply, created.reason), status: 409 });
    const { i18n } = reply.page;
    return pages.send(reply, 'sso-setup-token', { title: i18n.t('sso.setup.scim.createdTitle'), token: created.token, baseUrl: `${config.authUrl}${options.scimBasePath}` });
  });
};
