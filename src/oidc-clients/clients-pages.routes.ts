/**
 * `/admin/clients`: the operators' pages of the client registry, in the admin area's frame (its
 * header and navigation): the list with the form that registers a client, one client's page with
 * its edit form and the buttons that rotate its secret and delete it. The forms call the service
 * the JSON API calls, with the same audit source (the acting admin, their IP and user agent).
 *
 * A new secret (a new confidential client, a rotation) is shown on the page that answers the form
 * post, once: never in a URL, never stored, `no-store` like every page. Other forms answer 303 back
 * to a page with `?notice=CODE` or `?error=CODE`; a form the rules refuse comes back filled in:
 * the register form with each problem in a summary linked to its field and beside it
 * (web/form-errors.ts), the edit form with each problem listed. Register where form bodies are parsed; CSRF (origin + token) is checked
 * for every form post before these handlers run. Hidden from the OpenAPI document.
 *
 * ADMIN only, declared on each route and checked before any request body or query is read, as the
 * admin pages do; a form post also needs a recent second factor (REAUTH_REQUIRED: the 403 page).
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { shownCode } from '../web/page-query.ts';
import { templatesIn, type PageLanguage } from '../web/render.ts';
import { createAdminPageRenderer } from '../admin/admin-area.ts';
import type { AdminNavEntry } from '../module.ts';
import { formatTime } from '../web/time-text.ts';
import { formView, type FormProblem, type FormView } from '../web/form-errors.ts';
import { DEFAULT_GRANT_TYPES, DEFAULT_ID_TOKEN_ALG, DEVICE_CODE_GRANT, GRANT_TYPES, ID_TOKEN_ALGS, type ClientProblem } from './client-rules.ts';
import type { OidcClient, OidcClientsService } from './clients.service.ts';
import { clientsError, clientsNotice, problemText } from './clients-pages.messages.ts';
import type { ClientFormValues, ClientPages, PageAlert } from './clients-pages.types.ts';

export interface ClientPageOptions {
  oidcClients: OidcClientsService;
  /** The admin area's navigation (its header's). */
  adminNav: readonly AdminNavEntry[];
}

export const CLIENTS_PAGE = '/admin/clients';
export const clientPage = (id: string) => `${CLIENTS_PAGE}/${encodeURIComponent(id)}`;

/** Each grant type's label on the register form (`oidc-clients.grant.<key>`); the device code grant's type is a URN. */
const GRANT_LABEL_KEYS: Readonly<Record<string, string>> = {
  authorization_code: 'oidc-clients.grant.authorization_code',
  refresh_token: 'oidc-clients.grant.refresh_token',
  client_credentials: 'oidc-clients.grant.client_credentials',
  [DEVICE_CODE_GRANT]: 'oidc-clients.grant.device_code',
};
const grantChoices = (i18n: PageLanguage) =>
  GRANT_TYPES.map((value, index) => ({ value, label: Object.hasOwn(GRANT_LABEL_KEYS, value) ? i18n.t(GRANT_LABEL_KEYS[value]!) : value, id: `grant-${index}` }));

/** The error code of a refused form: a redirect URI's, or the metadata's. */
const refusalCode = (problems: readonly ClientProblem[]) =>
  problems.some((problem) => /^(redirectUris|postLogoutRedirectUris)\b/.test(problem.field)) ? 'INVALID_REDIRECT_URI' : 'INVALID_CLIENT_METADATA';

/** The register form's inputs that a problem can concern, in page order (web/form-errors.ts). */
const REGISTER_FIELDS: readonly string[] = ['name', 'redirectUris', 'postLogoutRedirectUris', ...GRANT_TYPES.map((_, index) => `grant-${index}`), 'idTokenSignedResponseAlg'];

/** The inputs a problem's field concerns (`redirectUris.1` is that text area; the grant types are their boxes, the first one first). */
function inputsOf(field: string): readonly string[] {
  const [name = ''] = field.split('.');
  if (name === 'grantTypes') return REGISTER_FIELDS.filter((id) => id.startsWith('grant-'));
  return REGISTER_FIELDS.includes(name) ? [name] : [];
}

/**
 * The register form sent back after `problems` (none: a fresh form, which takes no focus on a
 * list page): a summary linking each problem to its input, each message at its input.
 */
function registerForm(values: ClientFormValues, refused?: { problems: readonly ClientProblem[]; input: { redirectUris: readonly string[]; postLogoutRedirectUris: readonly string[] }; i18n: PageLanguage }): FormView {
  if (refused === undefined) return formView({ fieldOrder: [] });
  const { problems, input, i18n } = refused;
  const formProblems: FormProblem[] = problems.map((problem) => ({ message: problemText(problem, input, i18n), fields: inputsOf(problem.field) }));
  const texts: Record<string, string> = { name: values.name, redirectUris: values.redirectUris, postLogoutRedirectUris: values.postLogoutRedirectUris };
  // The boxes are one field: filled when one is ticked (focus goes to the first box, if it goes there).
  GRANT_TYPES.forEach((_, index) => (texts[`grant-${index}`] = values.grantTypes.join(',')));
  // The summary links each problem by its field's label (the grant boxes by their legend); the message is beside the field.
  const labels = {
    name: i18n.t('oidc-clients.field.name'),
    redirectUris: i18n.t('oidc-clients.field.redirectUris'),
    postLogoutRedirectUris: i18n.t('oidc-clients.field.postLogoutRedirectUris'),
    idTokenSignedResponseAlg: i18n.t('oidc-clients.register.alg'),
    ...Object.fromEntries(REGISTER_FIELDS.filter((id) => id.startsWith('grant-')).map((id) => [id, i18n.t('oidc-clients.field.grantTypes')])),
  };
  return formView({ fieldOrder: REGISTER_FIELDS, problems: formProblems, code: refusalCode(problems), values: texts, labels });
}

function refusal(problems: readonly ClientProblem[], form: { redirectUris: readonly string[]; postLogoutRedirectUris: readonly string[] }, i18n: PageLanguage): PageAlert {
  return { ...clientsError(refusalCode(problems), i18n), details: problems.map((problem) => problemText(problem, form, i18n)) };
}

/** The lines of a text area that hold something, trimmed. */
const lines = (text: string | undefined) => (text ?? '').split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '');

/** A repeated form field (checkboxes) arrives as a string once, as an array more often. */
const asList = (value: string | string[] | undefined) => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** The notice and error a form's redirect put in the URL, in the page's language. */
function alertsOf(query: { notice?: string | undefined; error?: string | undefined }, i18n: PageLanguage): PageAlert[] {
  const alerts: PageAlert[] = [];
  const notice = query.notice === undefined ? null : clientsNotice(query.notice, i18n);
  if (notice !== null) alerts.push(notice);
  if (query.error !== undefined) alerts.push(clientsError(query.error, i18n));
  return alerts;
}

const typeOf = (client: OidcClient, i18n: PageLanguage) => i18n.t(client.isPublic ? 'oidc-clients.type.public' : 'oidc-clients.type.confidential');

const EMPTY_FORM: ClientFormValues = {
  name: '',
  redirectUris: '',
  postLogoutRedirectUris: '',
  isPublic: false,
  grantTypes: [...DEFAULT_GRANT_TYPES],
  isFirstParty: false,
  idTokenSignedResponseAlg: DEFAULT_ID_TOKEN_ALG,
};

const hidden = { hide: true } as const;
const adminOnly = { access: access.role(ADMIN_ROLE) };
const csrfField = z.string().max(200).optional();
const pageQuery = z.object({ notice: shownCode, error: shownCode });
/** Room for MAX_URIS long URIs, one a line; the rules hold the real limits. */
const uriLines = z.string().max(64_000).optional();
const clientParams = z.object({ id: z.string().min(1).max(64) });

const createForm = z.object({
  name: z.string().max(1000).optional(),
  redirectUris: uriLines,
  postLogoutRedirectUris: uriLines,
  clientType: z.enum(['confidential', 'public']).optional(),
  grantTypes: z.union([z.string().max(200), z.array(z.string().max(200)).max(20)]).optional(),
  firstParty: z.string().max(10).optional(),
  idTokenSignedResponseAlg: z.string().max(20).optional(),
  csrfToken: csrfField,
});

const updateForm = z.object({ name: z.string().max(1000).optional(), redirectUris: uriLines, postLogoutRedirectUris: uriLines, exchangeResources: uriLines, csrfToken: csrfField });

/** Whether a client's exchange policy may be set: a confidential client an administrator registered (exchange-policy.ts). */
const mayExchange = (client: OidcClient) => !client.isPublic && client.origin !== 'registration' && client.origin !== 'open_registration';

export const clientPageRoutes: FastifyPluginAsyncZod<ClientPageOptions> = async (app, options) => {
  const { oidcClients } = options;
  const pages = createAdminPageRenderer<ClientPages>(templatesIn(join(import.meta.dirname, 'templates')), options.adminNav);
  /** The acting admin, for the audit log. */
  const actor = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);

  async function showList(request: FastifyRequest, reply: FastifyReply, values: ClientFormValues, alerts: PageAlert[], form = registerForm(values)) {
    const clients = await oidcClients.list();
    const { i18n } = reply.page;
    return pages.send(reply, 'admin-clients', {
      title: i18n.t('oidc-clients.list.title'),
      isFull: true,
      section: 'clients',
      alerts,
      clients: clients.map((client) => ({
        href: clientPage(client.id),
        id: client.id,
        name: client.name,
        type: typeOf(client, i18n),
        grantTypes: client.grantTypes,
        origin: i18n.t(`oidc-clients.origin.${client.origin}`),
        isSelfRegistered: client.origin === 'registration' || client.origin === 'open_registration',
        createdAt: formatTime(client.createdAt, i18n.locale),
        lastUsedAt: client.lastUsedAt === null ? null : formatTime(client.lastUsedAt, i18n.locale),
      })),
      form,
      values,
      grantTypeChoices: grantChoices(i18n),
      algChoices: ID_TOKEN_ALGS,
      createAction: CLIENTS_PAGE,
    });
  }

  function showClient(request: FastifyRequest, reply: FastifyReply, client: OidcClient, alerts: PageAlert[], form?: { name: string; redirectUris: string; postLogoutRedirectUris: string; exchangeResources: string }) {
    const base = clientPage(client.id);
    const { i18n } = reply.page;
    return pages.send(reply, 'admin-client', {
      title: client.name,
      isWide: true,
      section: 'clients',
      alerts,
      client: {
        id: client.id,
        name: client.name,
        type: typeOf(client, i18n),
        isPublic: client.isPublic,
        isFirstParty: client.isFirstParty,
        redirectUris: client.redirectUris,
        postLogoutRedirectUris: client.postLogoutRedirectUris,
        grantTypes: client.grantTypes,
        exchangeResources: client.exchangeResources,
        mayExchange: mayExchange(client),
        jwksUri: client.jwksUri,
        idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
        origin: i18n.t(`oidc-clients.origin.${client.origin}`),
        isSelfRegistered: client.origin === 'registration' || client.origin === 'open_registration',
        lastUsedAt: client.lastUsedAt === null ? null : formatTime(client.lastUsedAt, i18n.locale),
        createdAt: formatTime(client.createdAt, i18n.locale),
        updatedAt: formatTime(client.updatedAt, i18n.locale),
        secretRotatedAt: client.secretRotatedAt === null ? null : formatTime(client.secretRotatedAt, i18n.locale),
      },
      form: form ?? { name: client.name, redirectUris: client.redirectUris.join('\n'), postLogoutRedirectUris: client.postLogoutRedirectUris.join('\n'), exchangeResources: client.exchangeResources.join('\n') },
      actions: { update: base, rotateSecret: `${base}/rotate-secret`, delete: `${base}/delete` },
    });
  }

  /** The page that shows a secret, this once (the answer to the form post: never a URL). */
  function showSecret(request: FastifyRequest, reply: FastifyReply, client: OidcClient, clientSecret: string, isNew: boolean) {
    const { i18n } = reply.page;
    const heading = i18n.t(isNew ? 'oidc-clients.secret.registered.title' : 'oidc-clients.secret.rotated.title');
    return pages.send(reply, 'admin-client-secret', {
      title: heading,
      section: 'clients',
      alerts: [],
      heading,
      intro: i18n.t(isNew ? 'oidc-clients.secret.registered.intro' : 'oidc-clients.secret.rotated.intro', { name: client.name }),
      clientId: client.id,
      clientName: client.name,
      clientSecret,
      clientHref: clientPage(client.id),
    });
  }

  const toList = (reply: FastifyReply, query: { notice: string } | { error: string }) => reply.redirect(`${CLIENTS_PAGE}?${new URLSearchParams(query)}`, 303);

  app.get(CLIENTS_PAGE, { config: adminOnly, schema: { ...hidden, querystring: pageQuery } }, async (request, reply) => showList(request, reply, EMPTY_FORM, alertsOf(request.query, reply.page.i18n)));

  app.get(`${CLIENTS_PAGE}/:id`, { config: adminOnly, schema: { ...hidden, params: z.object({ id: z.string() }), querystring: pageQuery } }, async (request, reply) => {
    const client = await oidcClients.show(request.params.id);
    if (client === null) return toList(reply, { error: 'CLIENT_NOT_FOUND' });
    return showClient(request, reply, client, alertsOf(request.query, reply.page.i18n));
  });

  // The forms change the registry: a recent second factor too. What cannot be told apart by the
  // handlers (a malformed field, a database outage) goes back to the list with the error code.
  const formRoute = { config: { formErrorPage: CLIENTS_PAGE, access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) } };

  app.post(CLIENTS_PAGE, { ...formRoute, schema: { ...hidden, body: createForm } }, async (request, reply) => {
    const body = request.body;
    const form: ClientFormValues = {
      name: body.name ?? '',
      redirectUris: body.redirectUris ?? '',
      postLogoutRedirectUris: body.postLogoutRedirectUris ?? '',
      isPublic: body.clientType === 'public',
      grantTypes: asList(body.grantTypes),
      isFirstParty: body.firstParty !== undefined,
      idTokenSignedResponseAlg: body.idTokenSignedResponseAlg ?? DEFAULT_ID_TOKEN_ALG,
    };
    const input = {
      name: form.name,
      redirectUris: lines(form.redirectUris),
      postLogoutRedirectUris: lines(form.postLogoutRedirectUris),
      // Unticked boxes send nothing: here no box ticked means no grant type, not the default.
      grantTypes: form.grantTypes,
      isPublic: form.isPublic,
      isFirstParty: form.isFirstParty,
      idTokenSignedResponseAlg: form.idTokenSignedResponseAlg,
    };
    const result = await oidcClients.create(input, actor(request));
    if (!result.ok) return showList(request, reply, form, [], registerForm(form, { problems: result.problems, input, i18n: reply.page.i18n }));
    if (result.clientSecret === undefined) return reply.redirect(`${clientPage(result.client.id)}?notice=CLIENT_REGISTERED`, 303);
    return showSecret(request, reply, result.client, result.clientSecret, true);
  });

  app.post(`${CLIENTS_PAGE}/:id`, { ...formRoute, schema: { ...hidden, params: clientParams, body: updateForm } }, async (request, reply) => {
    const { id } = request.params;
    const form = { name: request.body.name ?? '', redirectUris: request.body.redirectUris ?? '', postLogoutRedirectUris: request.body.postLogoutRedirectUris ?? '', exchangeResources: request.body.exchangeResources ?? '' };
    // The policy box is on the form only for a client that may exchange: absent, the policy stays.
    const changes = {
      name: form.name,
      redirectUris: lines(form.redirectUris),
      postLogoutRedirectUris: lines(form.postLogoutRedirectUris),
      ...(request.body.exchangeResources !== undefined && { exchangeResources: lines(form.exchangeResources) }),
    };
    const result = await oidcClients.update(id, changes, actor(request));
    if (result.ok) return reply.redirect(`${clientPage(id)}?notice=CLIENT_SAVED`, 303);
    if (result.reason === 'NOT_FOUND') return toList(reply, { error: 'CLIENT_NOT_FOUND' });
    const client = await oidcClients.show(id);
    if (client === null) return toList(reply, { error: 'CLIENT_NOT_FOUND' });
    return showClient(request, reply, client, [refusal(result.problems, changes, reply.page.i18n)], form);
  });

  const stateBody = z.object({ csrfToken: csrfField }).optional();

  app.post(`${CLIENTS_PAGE}/:id/rotate-secret`, { ...formRoute, schema: { ...hidden, params: clientParams, body: stateBody } }, async (request, reply) => {
    const { id } = request.params;
    const result = await oidcClients.rotateSecret(id, actor(request));
    if (result.ok) return showSecret(request, reply, result.client, result.clientSecret, false);
    if (result.reason === 'PUBLIC_CLIENT') return reply.redirect(`${clientPage(id)}?error=PUBLIC_CLIENT_HAS_NO_SECRET`, 303);
    if (result.reason === 'KEY_CLIENT') return reply.redirect(`${clientPage(id)}?error=KEY_CLIENT_HAS_NO_SECRET`, 303);
    return toList(reply, { error: 'CLIENT_NOT_FOUND' });
  });

  app.post(`${CLIENTS_PAGE}/:id/delete`, { ...formRoute, schema: { ...hidden, params: clientParams, body: stateBody } }, async (request, reply) => {
    const deleted = await oidcClients.delete(request.params.id, actor(request));
    return toList(reply, deleted ? { notice: 'CLIENT_DELETED' } : { error: 'CLIENT_NOT_FOUND' });
  });
};
