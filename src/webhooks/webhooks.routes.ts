/**
 * `/api/admin/webhooks`: webhook endpoints and their deliveries, for holders of the ADMIN role.
 * Every route checks the caller (401 UNAUTHENTICATED, 403 FORBIDDEN) before reading the request;
 * a change also needs a recent second factor (403 REAUTH_REQUIRED).
 * A signing secret is in exactly two answers, the one that registers the endpoint and the one that
 * rotates its secret (both `Cache-Control: no-store`); responses are built from declared schemas,
 * which strip every other field, so a sealed secret never leaves.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError, type FieldError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { requestSource } from '../audit/request-source.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { isoTime } from '../lib/clock.ts';
import { MAX_URL_LENGTH } from '../http/outbound/target-rules.ts';
import { MAX_DESCRIPTION_LENGTH, MAX_EVENT_TYPES, type EndpointProblem, type WebhookDelivery, type WebhookEndpoint, type WebhooksService } from './webhooks.service.ts';

export interface WebhookRouteOptions {
  webhooks: WebhooksService;
}

export const WEBHOOKS_API = '/api/admin/webhooks';

const time = (epochMs: number | null) => (epochMs === null ? null : isoTime(epochMs));

const webhookEndpoint = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string(),
    eventTypes: z.array(z.string()),
    enabled: z.boolean(),
    disabledAt: z.iso.datetime().nullable(),
    disabledReason: z.enum(['ADMIN', 'FAILING']).nullable().describe('FAILING: Gatehouse disabled it after WEBHOOK_DISABLE_AFTER of failed deliveries'),
    failingSince: z.iso.datetime().nullable().describe('The first failed attempt since the last delivered one; null while healthy'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    secretRotatedAt: z.iso.datetime().nullable(),
    previousSecretExpiresAt: z.iso.datetime().nullable().describe('After a rotation, the previous secret signs too (a second signature) until then'),
  })
  .meta({ id: 'WebhookEndpoint' });

const webhookDelivery = z
  .object({
    id: z.string(),
    endpointId: z.string(),
    webhookId: z.string().describe('The webhook-id header: the same on every attempt and on a redelivery'),
    eventType: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    lastResponseCode: z.number().int().nullable(),
    lastError: z.string().nullable().describe('A short code: HTTP_STATUS, REDIRECT_NOT_FOLLOWED, TIMEOUT, CONNECTION_REFUSED, DNS_FAILED, ADDRESS_NOT_ALLOWED, TLS_ERROR, …'),
    lastResponseSnippet: z.string().nullable().describe('The first characters of the receiver’s last answer'),
    nextAttemptAt: z.iso.datetime().nullable(),
    firstAttemptAt: z.iso.datetime().nullable(),
    lastAttemptAt: z.iso.datetime().nullable(),
    deliveredAt: z.iso.datetime().nullable(),
    createdAt: z.iso.datetime(),
    redeliveryOf: z.string().nullable(),
    payload: z.unknown().describe('The body sent: {type, timestamp, data}'),
  })
  .meta({ id: 'WebhookDelivery' });

export function toEndpointBody(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    eventTypes: endpoint.eventTypes,
    enabled: endpoint.isEnabled,
    disabledAt: time(endpoint.disabledAt),
    disabledReason: endpoint.disabledReason,
    failingSince: time(endpoint.failingSince),
    createdAt: isoTime(endpoint.createdAt),
    updatedAt: isoTime(endpoint.updatedAt),
    secretRotatedAt: time(endpoint.secretRotatedAt),
    previousSecretExpiresAt: time(endpoint.previousSecretExpiresAt),
  };
}

export function toDeliveryBody(delivery: WebhookDelivery) {
  return {
    id: delivery.id,
    endpointId: delivery.endpointId,
    webhookId: delivery.webhookId,
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts,
    lastResponseCode: delivery.lastResponseCode,
    lastError: delivery.lastError,
    lastResponseSnippet: delivery.lastResponseSnippet,
    nextAttemptAt: time(delivery.nextAttemptAt),
    firstAttemptAt: time(delivery.firstAttemptAt),
    lastAttemptAt: time(delivery.lastAttemptAt),
    deliveredAt: time(delivery.deliveredAt),
    createdAt: isoTime(delivery.createdAt),
    redeliveryOf: delivery.redeliveryOf,
    payload: delivery.payload,
  };
}

/** The rules' refusal: the URL's code when the URL is at fault, else WEBHOOK_EVENT_UNKNOWN or VALIDATION_ERROR. */
export function endpointProblemsError(problems: readonly EndpointProblem[]): AppError {
  const errors: FieldError[] = problems.map(({ field, message, reason }) => ({ field, message, reason }));
  const first = problems.find((problem) => problem.field === 'url') ?? problems[0];
  const code =
    first?.reason === 'URL_NOT_ALLOWED' ? 'WEBHOOK_URL_NOT_ALLOWED' : first?.reason === 'URL_INVALID' ? 'WEBHOOK_URL_INVALID' : problems.some((problem) => problem.reason === 'EVENT_UNKNOWN') ? 'WEBHOOK_EVENT_UNKNOWN' : 'VALIDATION_ERROR';
  return new AppError(code, { errors });
}

const required = (what: string) => ({ error: (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`) });
const eventTypeList = z.array(z.string({ error: 'must be a string' }).max(200), { error: 'must be an array of event types' }).max(MAX_EVENT_TYPES * 4);

const createBody = z
  .object(
    {
      url: z.string(required('a string')).max(MAX_URL_LENGTH * 2).describe('https URL of the receiver (http only in development and test); no credentials, no fragment; not a private address'),
      eventTypes: eventTypeList.describe('The event types to send: see GET /api/admin/webhooks/event-types'),
      description: z.string({ error: 'must be a string' }).max(MAX_DESCRIPTION_LENGTH * 5).optional().describe(`At most ${MAX_DESCRIPTION_LENGTH} characters`),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'WebhookEndpointCreateRequest' });

const updateBody = z
  .object(
    {
      url: z.string({ error: 'must be a string' }).max(MAX_URL_LENGTH * 2).optional(),
      eventTypes: eventTypeList.optional().describe('The complete new list'),
      description: z.string({ error: 'must be a string' }).max(MAX_DESCRIPTION_LENGTH * 5).optional(),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'WebhookEndpointUpdateRequest' });

const endpointParams = z.object({ id: z.string().min(1).max(64) });
const deliveryParams = z.object({ deliveryId: z.string().min(1).max(64) });

const guarded = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Not an ADMIN (FORBIDDEN); a cookie-authenticated request without a valid CSRF token (CSRF_FAILED); a second factor needed first (STEP_UP_REQUIRED, REAUTH_REQUIRED)'),
};
const notFound = { 404: errorResponse.describe('No such endpoint (WEBHOOK_NOT_FOUND)') };
const invalid = {
  422: errorResponse.describe('Invalid fields (VALIDATION_ERROR); a URL that is malformed (WEBHOOK_URL_INVALID) or may not receive webhooks (WEBHOOK_URL_NOT_ALLOWED); an event type Gatehouse does not send (WEBHOOK_EVENT_UNKNOWN). Each problem is in `errors`'),
};
const common = { tags: ['admin'], security: [{ bearer: [] }] };

/** Reading endpoints and deliveries: ADMIN only, checked before the request is read. */
const adminOnly = { access: access.role(ADMIN_ROLE) };
/** A change decides where account events go, as sensitive as the client registry: a recent second factor too. */
const adminChange = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };

/** The acting admin, for the audit log. */
const actor = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);

export const webhookRoutes: FastifyPluginAsyncZod<WebhookRouteOptions> = async (app, { webhooks }) => {

  app.get(
    `${WEBHOOKS_API}/event-types`,
    { config: adminOnly, schema: { ...common, summary: 'The event types an endpoint may ask for', response: { 200: z.object({ eventTypes: z.array(z.string()) }), ...guarded } } },
    async () => ({ eventTypes: [...webhooks.eventTypes] }),
  );

  app.get(
    WEBHOOKS_API,
    { config: adminOnly, schema: { ...common, summary: 'The webhook endpoints, newest first (never their secrets)', response: { 200: z.object({ endpoints: z.array(webhookEndpoint) }).meta({ id: 'WebhookEndpointList' }), ...guarded } } },
    async () => ({ endpoints: (await webhooks.list()).map(toEndpointBody) }),
  );

  app.get(
    `${WEBHOOKS_API}/:id`,
    { config: adminOnly, schema: { ...common, summary: 'One endpoint (never its secret)', params: endpointParams, response: { 200: webhookEndpoint, ...guarded, ...notFound } } },
    async (request) => {
      const endpoint = await webhooks.show(request.params.id);
      if (endpoint === null) throw new AppError('WEBHOOK_NOT_FOUND');
      return toEndpointBody(endpoint);
    },
  );

  app.post(
    WEBHOOKS_API,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'Register an endpoint; its signing secret is in this answer only',
        description: 'The secret (`whsec_…`) is shown this once: keep it now. Audited as `webhook.endpoint_created`.',
        body: createBody,
        response: { 201: z.object({ endpoint: webhookEndpoint, secret: z.string().describe('whsec_…: shown this once') }).meta({ id: 'WebhookEndpointCreated' }), ...bodyErrorResponses, ...guarded, ...invalid },
      },
    },
    async (request, reply) => {
      const { url, eventTypes, description } = request.body;
      const result = await webhooks.create({ url, eventTypes, ...(description !== undefined && { description }) }, actor(request));
      if (!result.ok) throw endpointProblemsError(result.problems);
      reply.header('cache-control', 'no-store');
      return reply.code(201).send({ endpoint: toEndpointBody(result.endpoint), secret: result.secret });
    },
  );

  app.patch(
    `${WEBHOOKS_API}/:id`,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'Change an endpoint’s URL, event types (replaced whole) or description',
        description: 'The same rules as registering. Audited as `webhook.endpoint_updated`.',
        params: endpointParams,
        body: updateBody,
        response: { 200: webhookEndpoint, ...bodyErrorResponses, ...guarded, ...notFound, ...invalid },
      },
    },
    async (request) => {
      const { url, eventTypes, description } = request.body;
      const changes = { ...(url !== undefined && { url }), ...(eventTypes !== undefined && { eventTypes }), ...(description !== undefined && { description }) };
      const result = await webhooks.update(request.params.id, changes, actor(request));
      if (result.ok) return toEndpointBody(result.endpoint);
      if (result.reason === 'NOT_FOUND') throw new AppError('WEBHOOK_NOT_FOUND');
      throw endpointProblemsError(result.problems);
    },
  );

  for (const action of ['disable', 'enable'] as const) {
    app.post(
      `${WEBHOOKS_API}/:id/${action}`,
      {
        config: adminChange,
        schema: {
          ...common,
          summary: action === 'disable' ? 'Disable an endpoint: no more deliveries; its pending ones fail (ENDPOINT_DISABLED)' : 'Enable an endpoint again (healthy: its failure count starts over)',
          description: `Idempotent. Audited as \`webhook.endpoint_${action}d\` when it changes something.`,
          params: endpointParams,
          response: { 200: webhookEndpoint, ...guarded, ...notFound },
        },
      },
      async (request) => {
        const source = actor(request);
        const endpoint = action === 'disable' ? await webhooks.disable(request.params.id, source) : await webhooks.enable(request.params.id, source);
        if (endpoint === null) throw new AppError('WEBHOOK_NOT_FOUND');
        return toEndpointBody(endpoint);
      },
    );
  }

  app.post(
    `${WEBHOOKS_API}/:id/rotate-secret`,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'A new signing secret; the previous one keeps signing too for 24 hours',
        description: 'The new secret is in this answer only. During the 24 hours every webhook carries two signatures (new, then previous). Audited as `webhook.endpoint_secret_rotated`.',
        params: endpointParams,
        response: {
          200: z
            .object({
              id: z.string(),
              secret: z.string(),
              previousSecretExpiresAt: z.iso.datetime().nullable().describe('Null when the previous secret could not be opened (AUTH_SECRET changed): the new one signs alone'),
            })
            .meta({ id: 'WebhookEndpointSecret' }),
          ...guarded,
          ...notFound,
        },
      },
    },
    async (request, reply) => {
      const result = await webhooks.rotateSecret(request.params.id, actor(request));
      if (!result.ok) throw new AppError('WEBHOOK_NOT_FOUND');
      reply.header('cache-control', 'no-store');
      return { id: result.endpoint.id, secret: result.secret, previousSecretExpiresAt: time(result.endpoint.previousSecretExpiresAt) };
    },
  );

  app.delete(
    `${WEBHOOKS_API}/:id`,
    {
      config: adminChange,
      schema: { ...common, summary: 'Delete an endpoint and its deliveries', description: 'Audited as `webhook.endpoint_deleted`.', params: endpointParams, response: { 200: z.object({ ok: z.literal(true) }), ...guarded, ...notFound } },
    },
    async (request) => {
      if (!(await webhooks.delete(request.params.id, actor(request)))) throw new AppError('WEBHOOK_NOT_FOUND');
      return { ok: true as const };
    },
  );

  app.get(
    `${WEBHOOKS_API}/:id/deliveries`,
    {
      config: adminOnly,
      schema: {
        ...common,
        summary: 'An endpoint’s deliveries, newest first: status, attempts, last response code and error',
        params: endpointParams,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).optional() }),
        response: { 200: z.object({ deliveries: z.array(webhookDelivery) }).meta({ id: 'WebhookDeliveryList' }), ...guarded, ...notFound },
      },
    },
    async (request) => {
      const deliveries = await webhooks.listDeliveries(request.params.id, request.query.limit ?? 50);
      if (deliveries === null) throw new AppError('WEBHOOK_NOT_FOUND');
      return { deliveries: deliveries.map(toDeliveryBody) };
    },
  );

  app.post(
    `${WEBHOOKS_API}/deliveries/:deliveryId/redeliver`,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'Send a delivered or failed webhook again: a new delivery, same payload, same webhook-id',
        description: 'Audited as `webhook.delivery_redelivered`.',
        params: deliveryParams,
        response: {
          201: z.object({ delivery: webhookDelivery }),
          ...guarded,
          404: errorResponse.describe('No such delivery (WEBHOOK_DELIVERY_NOT_FOUND)'),
          409: errorResponse.describe('The delivery is still pending (WEBHOOK_DELIVERY_PENDING), or its endpoint is disabled (WEBHOOK_ENDPOINT_DISABLED)'),
        },
      },
    },
    async (request, reply) => {
      const result = await webhooks.redeliver(request.params.deliveryId, actor(request));
      if (!result.ok) throw new AppError(result.reason === 'PENDING' ? 'WEBHOOK_DELIVERY_PENDING' : result.reason === 'ENDPOINT_DISABLED' ? 'WEBHOOK_ENDPOINT_DISABLED' : 'WEBHOOK_DELIVERY_NOT_FOUND');
      return reply.code(201).send({ delivery: toDeliveryBody(result.delivery) });
    },
  );
};
