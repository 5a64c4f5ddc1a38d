/**
 * `/admin/webhooks`: the operators' pages of the webhook endpoints, in the admin area's frame: the
 * list with the form that registers an endpoint, one endpoint's page with its deliveries (status,
 * attempts, last response) and the buttons that disable or enable it, rotate its secret, delete it
 * and redeliver a delivery. The forms call the service the JSON API calls, with the same audit
 * source (the acting admin, their IP and user agent).
 *
 * A new secret (a new endpoint, a rotation) is shown on the page that answers the form post, once:
 * never in a URL, never stored in clear, `no-store` like every page. Other forms answer 303 back to
 * a page with `?notice=CODE` or `?error=CODE`; a form the rules refuse comes back filled in, with
 * each problem in a summary linked to its field and beside it (web/form-errors.ts). CSRF (origin + token) is checked for every form post before these handlers
 * run. Hidden from the OpenAPI document. ADMIN only, checked before any body or query is read; a
 * form post also needs a recent second factor (REAUTH_REQUIRED: the 403 page).
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
import { formView, type FormView } from '../web/form-errors.ts';
import type { EndpointProblem, WebhookEndpoint, WebhooksService } from './webhooks.service.ts';
import { SECRET_GRACE_MS } from './webhooks.model.ts';
import { RETRY_WINDOW_MS } from './delivery-worker.ts';
import { problemText, webhooksError, webhooksNotice } from './webhooks-pages.messages.ts';
import type { EndpointFormValues, PageAlert, WebhookPages } from './webhooks-pages.types.ts';

export interface WebhookPageOptions {
  webhooks: WebhooksService;
  /** The admin area's navigation (its header's). */
  adminNav: readonly AdminNavEntry[];
}

export const WEBHOOKS_PAGE = '/admin/webhooks';
export const endpointPage = (id: string) => `${WEBHOOKS_PAGE}/${encodeURIComponent(id)}`;

/** The error code of a refused form: the URL's, an unknown event type's, or any field's. */
function refusalCode(problems: readonly EndpointProblem[]): string {
  const url = problems.find((problem) => problem.field === 'url');
  if (url !== undefined) return url.reason === 'URL_NOT_ALLOWED' ? 'WEBHOOK_URL_NOT_ALLOWED' : 'WEBHOOK_URL_INVALID';
  return problems.some((problem) => problem.reason === 'EVENT_UNKNOWN') ? 'WEBHOOK_EVENT_UNKNOWN' : 'VALIDATION_ERROR';
}

/** A repeated form field (checkboxes) arrives as a string once, as an array more often. */
const asList = (value: string | string[] | undefined) => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** The notice and error a form's redirect put in the URL, in the page's language. */
function alertsOf(query: { notice?: string | undefined; error?: string | undefined }, i18n: PageLanguage): PageAlert[] {
  const alerts: PageAlert[] = [];
  const notice = query.notice === undefined ? null : webhooksNotice(query.notice, i18n);
  if (notice !== null) alerts.push(notice);
  if (query.error !== undefined) alerts.push(webhooksError(query.error, i18n));
  return alerts;
}

function stateOf(endpoint: WebhookEndpoint, i18n: PageLanguage): string {
  if (endpoint.isEnabled) return i18n.t(endpoint.failingSince === null ? 'webhooks.state.enabled' : 'webhooks.state.failing');
  return i18n.t(endpoint.disabledReason === 'FAILING' ? 'webhooks.state.autoDisabled' : 'webhooks.state.disabled');
}

const EMPTY_FORM: EndpointFormValues = { url: '', description: '', eventTypes: [] };

const hidden = { hide: true } as const;
const adminOnly = { access: access.role(ADMIN_ROLE) };
const csrfField = z.string().max(200).optional();
const pageQuery = z.object({ notice: shownCode, error: shownCode });
const endpointParams = z.object({ id: z.string().min(1).max(64) });

const createForm = z.object({
  url: z.string().max(5000).optional(),
  description: z.string().max(1000).optional(),
  eventTypes: z.union([z.string().max(200), z.array(z.string().max(200)).max(100)]).optional(),
  csrfToken: csrfField,
});
const stateBody = z.object({ csrfToken: csrfField }).optional();

export const webhookPageRoutes: FastifyPluginAsyncZod<WebhookPageOptions> = async (app, options) => {
  const { webhooks } = options;
  const pages = createAdminPageRenderer<WebhookPages>(templatesIn(join(import.meta.dirname, 'templates')), options.adminNav);
  /** The acting admin, for the audit log. */
  const actor = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);
  const eventTypeChoices = webhooks.eventTypes.map((value, index) => ({ value, id: `event-${index}`, descriptionKey: webhooks.eventDescriptions.get(value) ?? null }));
  /** The register form's inputs that a problem can concern, in page order; the event types are their boxes, the first one first. */
  const registerFields = ['url', 'description', ...eventTypeChoices.map((choice) => choice.id)];
  const inputsOf = (field: EndpointProblem['field']): readonly string[] => (field === 'eventTypes' ? eventTypeChoices.map((choice) => choice.id) : [field]);

  /**
   * The register form sent back after `problems` (none: a fresh form, which takes no focus on a
   * list page): a summary linking each problem to its input, each message at its input.
   */
  function registerForm(values: EndpointFormValues, problems: readonly EndpointProblem[] | null, i18n: PageLanguage): FormView {
    if (problems === null) return formView({ fieldOrder: [] });
    const texts: Record<string, string> = { url: values.url, description: values.description };
    // The boxes are one field: filled when one is ticked (focus goes to the first box, if it goes there).
    for (const choice of eventTypeChoices) texts[choice.id] = values.eventTypes.join(',');
    return formView({
      fieldOrder: registerFields,
      problems: problems.map((problem) => ({ message: problemText(problem, values, webhooks.eventTypes, i18n), fields: inputsOf(problem.field) })),
      code: webhooksError(refusalCode(problems), i18n).code,
      values: texts,
      // The summary links each problem by its field's label (the boxes by their legend); the message is beside the field.
      labels: { url: i18n.t('webhooks.field.url'), description: i18n.t('webhooks.field.description'), ...Object.fromEntries(eventTypeChoices.map((choice) => [choice.id, i18n.t('webhooks.field.events')])) },
    });
  }

  async function showList(request: FastifyRequest, reply: FastifyReply, values: EndpointFormValues, alerts: PageAlert[], form = registerForm(values, null, reply.page.i18n)) {
    const endpoints = await webhooks.list();
    const { i18n } = reply.page;
    return pages.send(reply, 'admin-webhooks', {
      title: i18n.t('webhooks.list.title'),
      isFull: true,
      section: 'webhooks',
      alerts,
      endpoints: endpoints.map((endpoint) => ({
        href: endpointPage(endpoint.id),
        id: endpoint.id,
        url: endpoint.url,
        description: endpoint.description,
        eventTypes: endpoint.eventTypes,
        state: stateOf(endpoint, i18n),
        createdAt: formatTime(endpoint.createdAt, i18n.locale),
      })),
      form,
      values,
      eventTypeChoices,
      retryWindow: i18n.duration(RETRY_WINDOW_MS / 1000),
      createAction: WEBHOOKS_PAGE,
    });
  }

  async function showEndpoint(request: FastifyRequest, reply: FastifyReply, endpoint: WebhookEndpoint, alerts: PageAlert[]) {
    const base = endpointPage(endpoint.id);
    const deliveries = (await webhooks.listDeliveries(endpoint.id, 100)) ?? [];
    const { i18n } = reply.page;
    const time = (epochMs: number) => formatTime(epochMs, i18n.locale);
    return pages.send(reply, 'admin-webhook', {
      title: i18n.t('webhooks.endpoint.title'),
      isFull: true,
      section: 'webhooks',
      alerts,
      endpoint: {
        id: endpoint.id,
        url: endpoint.url,
        description: endpoint.description,
        eventTypes: endpoint.eventTypes,
        isEnabled: endpoint.isEnabled,
        state: stateOf(endpoint, i18n),
        failingSince: endpoint.failingSince === null ? null : time(endpoint.failingSince),
        createdAt: time(endpoint.createdAt),
        updatedAt: time(endpoint.updatedAt),
        secretRotatedAt: endpoint.secretRotatedAt === null ? null : time(endpoint.secretRotatedAt),
        previousSecretExpiresAt: endpoint.previousSecretExpiresAt === null || endpoint.previousSecretExpiresAt <= Date.now() ? null : time(endpoint.previousSecretExpiresAt),
      },
      deliveries: deliveries.map((delivery) => ({
        id: delivery.id,
        eventType: delivery.eventType,
        status: delivery.status,
        attempts: delivery.attempts,
        lastResponseCode: delivery.lastResponseCode,
        lastError: delivery.lastError,
        lastResponseSnippet: delivery.lastResponseSnippet,
        nextAttemptAt: delivery.nextAttemptAt === null ? null : time(delivery.nextAttemptAt),
        createdAt: time(delivery.createdAt),
        isRedelivery: delivery.redeliveryOf !== null,
        redeliverAction: delivery.status === 'pending' || !endpoint.isEnabled ? null : `${base}/deliveries/${encodeURIComponent(delivery.id)}/redeliver`,
      })),
      secretGrace: i18n.duration(SECRET_GRACE_MS / 1000),
      actions: { disable: `${base}/disable`, enable: `${base}/enable`, rotateSecret: `${base}/rotate-secret`, delete: `${base}/delete` },
    });
  }

  /** The page that shows a secret, this once (the answer to the form post: never a URL). */
  function showSecret(request: FastifyRequest, reply: FastifyReply, endpoint: WebhookEndpoint, secret: string, isNew: boolean) {
    const { i18n } = reply.page;
    const heading = i18n.t(isNew ? 'webhooks.secret.registered.title' : 'webhooks.secret.rotated.title');
    return pages.send(reply, 'admin-webhook-secret', {
      title: heading,
      section: 'webhooks',
      alerts: [],
      heading,
      intro: i18n.t(
        isNew
          ? 'webhooks.secret.registered.intro'
          : endpoint.previousSecretExpiresAt === null
            ? 'webhooks.secret.rotated.introUnreadable'
            : 'webhooks.secret.rotated.intro',
        { grace: i18n.duration(SECRET_GRACE_MS / 1000) },
      ),
      endpointId: endpoint.id,
      url: endpoint.url,
      secret,
      endpointHref: endpointPage(endpoint.id),
    });
  }

  const toList = (reply: FastifyReply, query: { notice: string } | { error: string }) => reply.redirect(`${WEBHOOKS_PAGE}?${new URLSearchParams(query)}`, 303);
  const toEndpoint = (reply: FastifyReply, id: string, query: { notice: string } | { error: string }) => reply.redirect(`${endpointPage(id)}?${new URLSearchParams(query)}`, 303);

  app.get(WEBHOOKS_PAGE, { config: adminOnly, schema: { ...hidden, querystring: pageQuery } }, async (request, reply) => showList(request, reply, EMPTY_FORM, alertsOf(request.query, reply.page.i18n)));

  app.get(`${WEBHOOKS_PAGE}/:id`, { config: adminOnly, schema: { ...hidden, params: z.object({ id: z.string() }), querystring: pageQuery } }, async (request, reply) => {
    const endpoint = await webhooks.show(request.params.id);
    if (endpoint === null) return toList(reply, { error: 'WEBHOOK_NOT_FOUND' });
    return showEndpoint(request, reply, endpoint, alertsOf(request.query, reply.page.i18n));
  });

  // The forms decide where account events go: a recent second factor too. What the handlers cannot
  // tell apart (a malformed field, a database outage) goes back to the list.
  const formRoute = { config: { formErrorPage: WEBHOOKS_PAGE, access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) } };

  app.post(WEBHOOKS_PAGE, { ...formRoute, schema: { ...hidden, body: createForm } }, async (request, reply) => {
    const form: EndpointFormValues = { url: request.body.url ?? '', description: request.body.description ?? '', eventTypes: asList(request.body.eventTypes) };
    const result = await webhooks.create(form, actor(request));
    if (!result.ok) return showList(request, reply, form, [], registerForm(form, result.problems, reply.page.i18n));
    return showSecret(request, reply, result.endpoint, result.secret, true);
  });

  for (const action of ['disable', 'enable'] as const) {
    app.post(`${WEBHOOKS_PAGE}/:id/${action}`, { ...formRoute, schema: { ...hidden, params: endpointParams, body: stateBody } }, async (request, reply) => {
      const source = actor(request);
      const endpoint = action === 'disable' ? await webhooks.disable(request.params.id, source) : await webhooks.enable(request.params.id, source);
      if (endpoint === null) return toList(reply, { error: 'WEBHOOK_NOT_FOUND' });
      return toEndpoint(reply, endpoint.id, { notice: action === 'disable' ? 'WEBHOOK_DISABLED' : 'WEBHOOK_ENABLED' });
    });
  }

  app.post(`${WEBHOOKS_PAGE}/:id/rotate-secret`, { ...formRoute, schema: { ...hidden, params: endpointParams, body: stateBody } }, async (request, reply) => {
    const result = await webhooks.rotateSecret(request.params.id, actor(request));
    if (!result.ok) return toList(reply, { error: 'WEBHOOK_NOT_FOUND' });
    return showSecret(request, reply, result.endpoint, result.secret, false);
  });

  app.post(`${WEBHOOKS_PAGE}/:id/delete`, { ...formRoute, schema: { ...hidden, params: endpointParams, body: stateBody } }, async (request, reply) => {
    const deleted = await webhooks.delete(request.params.id, actor(request));
    return toList(reply, deleted ? { notice: 'WEBHOOK_DELETED' } : { error: 'WEBHOOK_NOT_FOUND' });
  });

  app.post(
    `${WEBHOOKS_PAGE}/:id/deliveries/:deliveryId/redeliver`,
    { ...formRoute, schema: { ...hidden, params: z.object({ id: z.string().min(1).max(64), deliveryId: z.string().min(1).max(64) }), body: stateBody } },
    async (request, reply) => {
      const { id, deliveryId } = request.params;
      const existing = await webhooks.showDelivery(deliveryId);
      if (existing === null || existing.endpointId !== id) return toEndpoint(reply, id, { error: 'WEBHOOK_DELIVERY_NOT_FOUND' });
      const result = await webhooks.redeliver(deliveryId, actor(request));
      if (result.ok) return toEndpoint(reply, id, { notice: 'WEBHOOK_REDELIVERED' });
      const code = result.reason === 'PENDING' ? 'WEBHOOK_DELIVERY_PENDING' : result.reason === 'ENDPOINT_DISABLED' ? 'WEBHOOK_ENDPOINT_DISABLED' : 'WEBHOOK_DELIVERY_NOT_FOUND';
      return toEndpoint(reply, id, { error: code });
    },
  );
};
