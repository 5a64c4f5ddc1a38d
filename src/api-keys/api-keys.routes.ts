/**
 * The JSON API of API keys:
 * - `/api/keys`: a signed-in person's own keys, and (with `organizationId`) those of an
 *   organization they are an OWNER or ADMIN of: list, create (a recent second factor, like every
 *   new credential; the key is in the answer only), revoke;
 * - `/api/admin/keys`, `/api/admin/users/:id/keys`, `/api/admin/organizations/:id/keys`: every key,
 *   for administrators (ADMIN; creating also asks for a recent second factor);
 * - `POST /api/auth/keys/introspect` (registered in the browser scope, where form bodies parse):
 *   RFC 7662 introspection for downstream apps, authenticated by a confidential OIDC client.
 * A request made with an API key is refused by every route here (403 API_KEY_NOT_ALLOWED): keys
 * cannot make, see or revoke keys.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { ApiKeysService, KeyActor } from './api-keys.service.ts';
import { keyIdOf } from './api-key-guard.ts';
import { createdKeyBody, createKeyBody, keyListBody, keyParams, refusalError, toKeyBody, toNewKeyInput } from './api-keys.schemas.ts';

export const KEYS_API = '/api/keys';
export const ADMIN_KEYS_API = '/api/admin/keys';

const tags = { tags: ['api-keys'] };
const guarded = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Made with an API key (API_KEY_NOT_ALLOWED); not an OWNER or ADMIN of the organization (ORGANIZATION_ROLE_REQUIRED); a second factor needed first (REAUTH_REQUIRED); a role or scope the key may not have (API_KEY_SCOPE_NOT_ALLOWED)'),
};
const notFound = { 404: errorResponse.describe('No such key or person here (API_KEY_NOT_FOUND), no such organization of yours (ORGANIZATION_NOT_FOUND); keys turned off (API_KEYS_DISABLED)') };
const creationErrors = {
  ...bodyErrorResponses,
  409: errorResponse.describe('Too many active keys (API_KEY_LIMIT_REACHED)'),
  422: errorResponse.describe('Invalid fields (VALIDATION_ERROR); a lifetime over API_KEY_MAX_TTL (API_KEY_TTL_TOO_LONG)'),
};

/** The signed-in person, refused when they came with a key: keys cannot manage keys. */
function person(request: FastifyRequest): RequestAuth {
  const auth = signedIn(request);
  if (keyIdOf(auth) !== null) throw new AppError('API_KEY_NOT_ALLOWED');
  return auth;
}

export const apiKeyRoutes: FastifyPluginAsyncZod<{ apiKeys: ApiKeysService }> = async (app, { apiKeys }) => {
  const listQuery = z.object({ organizationId: z.string().min(1).max(64).optional() });

  app.get(
    KEYS_API,
    { config: { access: access.user() }, schema: { ...tags, summary: 'Your API keys, or an organization’s (never their secrets)', querystring: listQuery, response: { 200: keyListBody, ...guarded } } },
    async (request) => {
      const auth = person(request);
      const { organizationId } = request.query;
      const keys = await apiKeys.list(organizationId === undefined ? { userId: auth.userId } : { organizationId }, { userId: auth.userId });
      if (keys === null) throw new AppError(await apiKeys.whyNot(organizationId!, { userId: auth.userId }));
      return { keys: keys.map(toKeyBody) };
    },
  );

  app.post(
    KEYS_API,
    {
      config: { access: access.user({ requires: [RECENT_SECOND_FACTOR] }) },
      schema: {
        ...tags,
        summary: 'Create an API key; the key is in this answer only',
        description: 'A personal key acts as you, narrowed to the roles and scopes chosen; with `organizationId`, an organization key acting for it with one role. Audited as `api_key.created`.',
        body: createKeyBody,
        response: { 201: createdKeyBody, ...guarded, ...notFound, ...creationErrors },
      },
    },
    async (request, reply) => {
      const auth = person(request);
      const actor: KeyActor = { userId: auth.userId };
      const input = toNewKeyInput(request.body);
      const source = requestSource(request, auth.userId);
      const { organizationId } = request.body;
      const result = organizationId === undefined ? await apiKeys.createPersonal(auth.userId, actor, input, source) : await apiKeys.createForOrganization(organizationId, actor, input, source);
      if (!result.ok) throw refusalError(result.reason);
      reply.header('cache-control', 'no-store');
      return reply.status(201).send({ key: toKeyBody(result.key), secret: result.secret });
    },
  );

  app.delete(
    `${KEYS_API}/:id`,
    { config: { access: access.user() }, schema: { ...tags, summary: 'Revoke a key at once (yours, or your organization’s)', params: keyParams, response: { 200: z.object({ key: keyListBody.shape.keys.element }), ...guarded, ...notFound } } },
    async (request) => {
      const auth = person(request);
      const result = await apiKeys.revoke(request.params.id, { userId: auth.userId }, requestSource(request, auth.userId));
      if (!result.ok) throw new AppError(result.reason);
      return { key: toKeyBody(result.key) };
    },
  );

  // Administrators: every key.
  const adminOnly = { access: access.role(ADMIN_ROLE) };
  const adminChange = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
  const admin = (request: FastifyRequest): KeyActor => ({ userId: person(request).userId, asAdmin: true });
  const adminTags = { tags: ['admin', 'api-keys'] };

  app.get(
    ADMIN_KEYS_API,
    {
      config: adminOnly,
      schema: { ...adminTags, summary: 'API keys: all, a person’s or an organization’s', querystring: z.object({ userId: z.string().min(1).max(64).optional(), organizationId: z.string().min(1).max(64).optional() }), response: { 200: keyListBody, ...guarded } },
    },
    async (request) => {
      const actor = admin(request);
      const { userId, organizationId } = request.query;
      const keys = await apiKeys.list(userId !== undefined ? { userId } : organizationId !== undefined ? { organizationId } : 'all', actor);
      return { keys: (keys ?? []).map(toKeyBody) };
    },
  );

  for (const [path, kind] of [['/api/admin/users/:id/keys', 'personal'], ['/api/admin/organizations/:id/keys', 'organization']] as const) {
    app.post(
      path,
      {
        config: adminChange,
        schema: {
          ...adminTags,
          summary: kind === 'personal' ? 'Create a personal key for a person (never more than they hold)' : 'Create an organization key',
          params: keyParams,
          body: createKeyBody.omit({ organizationId: true }),
          response: { 201: createdKeyBody, ...guarded, ...notFound, ...creationErrors },
        },
      },
      async (request, reply) => {
        const actor = admin(request);
        const source = requestSource(request, person(request).userId);
        const input = toNewKeyInput(request.body);
        const result = kind === 'personal' ? await apiKeys.createPersonal(request.params.id, actor, input, source) : await apiKeys.createForOrganization(request.params.id, actor, input, source);
        if (!result.ok) throw refusalError(result.reason);
        reply.header('cache-control', 'no-store');
        return reply.status(201).send({ key: toKeyBody(result.key), secret: result.secret });
      },
    );
  }

  app.delete(
    `${ADMIN_KEYS_API}/:id`,
    { config: adminOnly, schema: { ...adminTags, summary: 'Revoke any key at once', params: keyParams, response: { 200: z.object({ key: keyListBody.shape.keys.element }), ...guarded, ...notFound } } },
    async (request) => {
      const actor = admin(request);
      const result = await apiKeys.revoke(request.params.id, actor, requestSource(request, person(request).userId));
      if (!result.ok) throw new AppError(result.reason);
      return { key: toKeyBody(result.key) };
    },
  );
};
