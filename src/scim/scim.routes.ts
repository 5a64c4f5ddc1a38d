/**
 * The SCIM 2.0 protocol routes (RFC 7644), `/scim/v2/…`, for an organization's directory (Okta,
 * Microsoft Entra ID). Declared `access.anyone()` at Gatehouse's access layer: they take no
 * Gatehouse session; this plugin authenticates the organization's SCIM token itself (a preHandler
 * on its own routes only), so the token opens nothing else. Each token is rate limited
 * (RATE_LIMIT_SCIM_PER_TOKEN). Bodies are `application/scim+json` (or `application/json`);
 * every error, a framework one included, answers in SCIM's error shape (RFC 7644 §3.12). Not in the
 * OpenAPI document: the protocol is SCIM's (docs/guides/scim.md).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { access } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import { isUnavailable } from '../http/error-handler.ts';
import type { AuditSource } from '../audit/audit.service.ts';
import type { Limiter } from '../http/rate-limit.ts';
import type { ScimConfig } from './scim.config.ts';
import type { ScimCaller, ScimTokensService } from './scim-tokens.service.ts';
import type { createScimUsersService, Page, ScimFailure } from './scim-users.service.ts';
import type { createScimGroupsService } from './scim-groups.service.ts';
import { ERROR_SCHEMA, LIST_RESPONSE_SCHEMA, resourceTypes, schemas, serviceProviderConfig } from './scim-schemas.ts';

export const SCIM_BASE_PATH = '/scim/v2';
const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

declare module 'fastify' {
  interface FastifyRequest {
    scimCaller?: ScimCaller;
  }
}

export interface ScimRouteOptions {
  authUrl: string;
  config: ScimConfig;
  tokens: ScimTokensService;
  users: ReturnType<typeof createScimUsersService>;
  groups: ReturnType<typeof createScimGroupsService>;
  limiter: Limiter;
}

function scimError(reply: FastifyReply, status: number, detail: string, scimType?: string): FastifyReply {
  return reply.code(status).type(SCIM_CONTENT_TYPE).send({ schemas: [ERROR_SCHEMA], status: String(status), ...(scimType !== undefined && { scimType }), detail });
}

const fail = (reply: FastifyReply, failure: ScimFailure) => scimError(reply, failure.status, failure.detail, failure.scimType);

const callerOf = (request: FastifyRequest): ScimCaller => {
  if (request.scimCaller === undefined) throw new Error('scim: route without its token check');
  return request.scimCaller;
};

/** Who acts in the audit log: no Gatehouse user; the token and the directory's address. */
const sourceOf = (request: FastifyRequest): AuditSource => ({ actorUserId: null, ip: request.ip, userAgent: request.headers['user-agent'] ?? null });

type Query = Record<string, string | undefined>;

/** startIndex is 1-based (below 1 reads as 1); count is capped at SCIM_MAX_RESULTS (below 0 reads as 0). */
export function pageOf(query: Query, maxResults: number): Page {
  const number = (value: string | undefined, fallback: number) => (value !== undefined && /^-?\d{1,12}$/.test(value) ? Number(value) : fallback);
  return { startIndex: Math.min(Math.max(1, number(query.startIndex, 1)), 1_000_000_000), count: Math.min(Math.max(0, number(query.count, maxResults)), maxResults) };
}

function listResponse(resources: unknown[], total: number, page: Page) {
  return { schemas: [LIST_RESPONSE_SCHEMA], totalResults: total, startIndex: page.startIndex, itemsPerPage: resources.length, Resources: resources };
}

export async function scimRoutes(app: FastifyInstance, options: ScimRouteOptions): Promise<void> {
  const base = `${options.authUrl}${SCIM_BASE_PATH}`;
  const json = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(['application/scim+json'], { parseAs: 'string' }, json);

  // Every error of these routes in SCIM's shape: a refusal by the plumbing (a NUL in the query, a
  // body too large), storage unavailable (503, Retry-After), malformed JSON; anything else is a 500
  // that says nothing (the log has it).
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error instanceof AppError) {
      if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
      return scimError(reply, error.status, error.message, error.status === 400 ? 'invalidSyntax' : undefined);
    }
    if (isUnavailable(error)) {
      reply.header('retry-after', '1');
      return scimError(reply, 503, 'The service is temporarily unavailable. Try again shortly.');
    }
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) {
      request.log.error({ err: error }, 'scim request failed');
      return scimError(reply, 500, 'The request could not be completed.');
    }
    if (status === 415) return scimError(reply, 415, 'Send application/scim+json or application/json.');
    if (status === 413) return scimError(reply, 413, 'The body is too large.');
    return scimError(reply, status, status === 400 ? 'The request is malformed (the body is not valid JSON, say).' : 'The request is not valid.', status === 400 ? 'invalidSyntax' : undefined);
  });

  // The token: Authorization: Bearer gatehouse_scim_…, of an organization, not revoked; then its limit.
  app.addHook('preHandler', async (request, reply) => {
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const caller = match === null ? null : await options.tokens.authenticate(match[1]!);
    if (caller === null) {
      reply.header('www-authenticate', 'Bearer realm="scim"');
      return scimError(reply, 401, 'A valid SCIM token of this organization is required (Authorization: Bearer gatehouse_scim_…).');
    }
    const wait = await options.limiter.consume(caller.tokenId);
    if (wait !== null) {
      reply.header('retry-after', String(wait));
      return scimError(reply, 429, 'Too many requests with this token: try again later.', 'tooMany');
    }
    request.scimCaller = caller;
    return undefined;
  });

  const routeOptions = { config: { access: access.anyone() }, schema: { hide: true } };
  const send = (reply: FastifyReply, status: number, body: unknown) => reply.code(status).type(SCIM_CONTENT_TYPE).send(body);

  app.get(`${SCIM_BASE_PATH}/ServiceProviderConfig`, routeOptions, async (_request, reply) => send(reply, 200, serviceProviderConfig(base, options.config.maxResults, `${options.authUrl}/api/docs`)));
  app.get(`${SCIM_BASE_PATH}/ResourceTypes`, routeOptions, async (_request, reply) => {
    const types = resourceTypes(base);
    return send(reply, 200, listResponse(types, types.length, { startIndex: 1, count: types.length }));
  });
  app.get<{ Params: { id: string } }>(`${SCIM_BASE_PATH}/ResourceTypes/:id`, routeOptions, async (request, reply) => {
    const found = resourceTypes(base).find((type) => type.id === request.params.id);
    return found === undefined ? scimError(reply, 404, 'No such resource type.') : send(reply, 200, found);
  });
  app.get(`${SCIM_BASE_PATH}/Schemas`, routeOptions, async (_request, reply) => {
    const all = schemas(base);
    return send(reply, 200, listResponse(all, all.length, { startIndex: 1, count: all.length }));
  });
  app.get<{ Params: { id: string } }>(`${SCIM_BASE_PATH}/Schemas/:id`, routeOptions, async (request, reply) => {
    const found = schemas(base).find((schema) => schema.id === request.params.id);
    return found === undefined ? scimError(reply, 404, 'No such schema.') : send(reply, 200, found);
  });

  for (const [path, service] of [['Users', options.users], ['Groups', options.groups]] as const) {
    const collection = `${SCIM_BASE_PATH}/${path}`;
    app.get<{ Querystring: Query }>(collection, routeOptions, async (request, reply) => {
      const page = pageOf(request.query, options.config.maxResults);
      const excludeMembers = (request.query.excludedAttributes ?? '').toLowerCase().split(',').map((item) => item.trim()).includes('members');
      const result = service === options.groups
        ? await options.groups.list(callerOf(request), request.query.filter, page, base, excludeMembers)
        : await options.users.list(callerOf(request), request.query.filter, page, base);
      return result.ok ? send(reply, 200, listResponse(result.resources, result.total, page)) : fail(reply, result);
    });
    app.post(collection, routeOptions, async (request, reply) => {
      const result = await service.create(callerOf(request), request.body, sourceOf(request), base);
      if (!result.ok) return fail(reply, result);
      reply.header('location', (result.resource.meta as { location: string }).location);
      return send(reply, 201, result.resource);
    });
    app.get<{ Params: { id: string } }>(`${collection}/:id`, routeOptions, async (request, reply) => {
      const result = await service.get(callerOf(request), request.params.id, base);
      return result.ok ? send(reply, 200, result.resource) : fail(reply, result);
    });
    app.put<{ Params: { id: string } }>(`${collection}/:id`, routeOptions, async (request, reply) => {
      const result = await service.replace(callerOf(request), request.params.id, request.body, sourceOf(request), base);
      return result.ok ? send(reply, 200, result.resource) : fail(reply, result);
    });
    app.patch<{ Params: { id: string } }>(`${collection}/:id`, routeOptions, async (request, reply) => {
      const result = await service.patch(callerOf(request), request.params.id, request.body, sourceOf(request), base);
      return result.ok ? send(reply, 200, result.resource) : fail(reply, result);
    });
    app.delete<{ Params: { id: string } }>(`${collection}/:id`, routeOptions, async (request, reply) => {
      const result = await service.delete(callerOf(request), request.params.id, sourceOf(request));
      return result.ok ? reply.code(204).send() : fail(reply, result);
    });
  }
}
