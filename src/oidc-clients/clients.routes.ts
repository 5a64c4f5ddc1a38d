/**
 * `/api/admin/clients`: the registry of OAuth / OIDC clients, for holders of the ADMIN role. As
 * in admin/admin.routes.ts, every route checks the caller (401 UNAUTHENTICATED, 403 FORBIDDEN)
 * before reading the request; a change also needs a recent second factor (403 REAUTH_REQUIRED).
 * A client secret is in exactly two answers, the one that creates the client and the one that
 * rotates its secret (both `Cache-Control: no-store`); responses are built from declared schemas,
 * which strip every other field, so the secret's hash never leaves.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError, type FieldError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { isoTime } from '../lib/clock.ts';
import { CLIENT_ORIGINS, GRANT_TYPES, ID_TOKEN_ALGS, MAX_EXCHANGE_RESOURCES, MAX_NAME_LENGTH, MAX_URI_LENGTH, MAX_URIS, type ClientProblem } from './client-rules.ts';
import type { OidcClient, OidcClientsService } from './clients.service.ts';

export interface ClientRouteOptions {
  oidcClients: OidcClientsService;
}

export const CLIENTS_API = '/api/admin/clients';

/** Room to say what is wrong; the rules (client-rules.ts) hold the real limits. */
const uriList = z
  .array(z.string({ error: 'must be a string' }).max(MAX_URI_LENGTH * 2, `must be at most ${MAX_URI_LENGTH} characters`), { error: 'must be an array of URIs' })
  .max(MAX_URIS * 5, `must list at most ${MAX_URIS} URIs`);

const backchannelUri = z
  .string({ error: 'must be a string' })
  .max(4096, 'must be at most 2048 characters')
  .nullable()
  .optional()
  .describe('Where Gatehouse posts a logout token (OpenID Back-Channel Logout 1.0) when a person signed in to the app signs out: https (http only on a loopback host), no fragment. null or empty: none');

const exchangeResources = z
  .array(z.string({ error: 'must be a string' }).max(MAX_URI_LENGTH * 2, `must be at most ${MAX_URI_LENGTH} characters`), { error: 'must be an array of resource indicators' })
  .max(MAX_EXCHANGE_RESOURCES * 5, `must list at most ${MAX_EXCHANGE_RESOURCES} resources`)
  .optional()
  .describe(
    'The APIs (resource indicators listed in OIDC_PROVIDER_RESOURCES) this client may exchange a person’s access token for, at the token endpoint (token exchange, RFC 8693); the complete list. Empty: none. Confidential clients registered by an administrator only',
  );

const oidcClient = z
  .object({
    clientId: z.string().describe('The client_id'),
    name: z.string(),
    public: z.boolean().describe('No secret: token_endpoint_auth_method `none` (PKCE required)'),
    firstParty: z.boolean().describe('One of ours: the provider may skip the consent screen'),
    redirectUris: z.array(z.string()),
    postLogoutRedirectUris: z.array(z.string()),
    grantTypes: z.array(z.string()),
    idTokenSignedResponseAlg: z.enum(ID_TOKEN_ALGS),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    secretRotatedAt: z.iso.datetime().nullable().describe('When the secret was last rotated; null if never, or for a public client'),
    backchannelLogoutUri: z.string().nullable().describe('Where Gatehouse posts a logout token when a person signed in to the app signs out (OpenID Back-Channel Logout 1.0); null: none'),
    origin: z
      .enum(CLIENT_ORIGINS)
      .describe(
        'How it came: `admin` (this API or the admin pages), `cli` (`gatehouse clients create`), `registration` (dynamic registration with the initial access token) or `open_registration` (dynamic registration in open mode: deleted if no code or token is issued to it within OIDC_PROVIDER_REGISTRATION_UNUSED_TTL)',
      ),
    lastUsedAt: z.iso.datetime().nullable().describe('When the provider last issued it a code or tokens (recorded at most once an hour); null: never'),
    exchangeResources: z.array(z.string()).describe('The APIs it may exchange a person’s access token for (token exchange, RFC 8693); empty: none'),
    dpopBoundAccessTokens: z.boolean().describe('Its token requests must carry a DPoP proof, so every token it gets is bound to its key (RFC 9449 `dpop_bound_access_tokens`)'),
    jwksUri: z.string().nullable().describe('Where its public keys are: it authenticates with a JWT signed by one of them (`private_key_jwt`, RFC 7523) and has no secret, and may sign request objects with them (JAR, RFC 9101); null: a secret, or none for a public client'),
  })
  .meta({ id: 'OidcClient' });

const createClientBody = z
  .object(
    {
      name: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }).max(1000, `must be at most ${MAX_NAME_LENGTH} characters`).describe('Shown to users on the consent screen; 1 to 100 characters'),
      redirectUris: uriList
        .optional()
        .describe('Exact redirect URIs: absolute, https (http only on 127.0.0.1, [::1] or localhost), no fragment, no wildcard; a custom scheme (com.example.app:/cb) for a public client only. At least one with authorization_code'),
      postLogoutRedirectUris: uriList.optional().describe('Where the provider may send the browser after sign-out; same rules'),
      grantTypes: z
        .array(z.string({ error: 'must be a string' }).max(200), { error: 'must be an array of grant types' })
        .max(20)
        .optional()
        .describe(`Of ${GRANT_TYPES.join(', ')}. Default authorization_code and refresh_token. implicit and password are refused`),
      public: z.boolean({ error: 'must be true or false' }).optional().describe('A public client (a browser or native app) has no secret. Default false'),
      firstParty: z.boolean({ error: 'must be true or false' }).optional().describe('Default false'),
      idTokenSignedResponseAlg: z.enum(ID_TOKEN_ALGS, { error: `must be one of ${ID_TOKEN_ALGS.join(', ')}` }).optional().describe('Default EdDSA'),
      backchannelLogoutUri: backchannelUri,
      exchangeResources,
      dpopBoundAccessTokens: z.boolean({ error: 'must be true or false' }).optional().describe('Require DPoP at the token endpoint: every token the client gets is bound to its key (RFC 9449). Default false'),
      jwksUri: z
        .string({ error: 'must be a string' })
        .max(MAX_URI_LENGTH * 2, `must be at most ${MAX_URI_LENGTH} characters`)
        .nullable()
        .optional()
        .describe('The URL of its public keys (a JWKS; https, or http on a loopback host): the client authenticates with a JWT signed by one of them (`private_key_jwt`) and gets no secret; it may sign request objects (JAR) with them. Confidential clients only'),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'OidcClientCreateRequest' });

const updateClientBody = z
  .object(
    {
      name: z.string({ error: 'must be a string' }).max(1000, `must be at most ${MAX_NAME_LENGTH} characters`).optional(),
      redirectUris: uriList.optional().describe('The complete new list'),
      postLogoutRedirectUris: uriList.optional().describe('The complete new list'),
      backchannelLogoutUri: backchannelUri,
      exchangeResources,
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'OidcClientUpdateRequest' });

const clientParams = z.object({ id: z.string().min(1).max(64) });

const guarded = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Not an ADMIN (FORBIDDEN); a cookie-authenticated request without a valid CSRF token (CSRF_FAILED); a second factor needed first (STEP_UP_REQUIRED, REAUTH_REQUIRED)'),
};
const notFound = { 404: errorResponse.describe('No such client (CLIENT_NOT_FOUND)') };
const invalid = {
  422: errorResponse.describe('Invalid fields (VALIDATION_ERROR); a redirect URI the rules refuse (INVALID_REDIRECT_URI); other settings the rules refuse (INVALID_CLIENT_METADATA). Each problem is in `errors`, with a stable `reason`'),
};
const common = { tags: ['admin'], security: [{ bearer: [] }] };

/** Reading the registry: ADMIN only, checked before the request is read. */
const adminOnly = { access: access.role(ADMIN_ROLE) };
/** Changing it is as sensitive as an administrator's change to a user: a recent second factor too. */
const adminChange = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };

/** The acting admin, for the audit log. */
const actor = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);

export function toClientBody(client: OidcClient) {
  return {
    clientId: client.id,
    name: client.name,
    public: client.isPublic,
    firstParty: client.isFirstParty,
    redirectUris: client.redirectUris,
    postLogoutRedirectUris: client.postLogoutRedirectUris,
    grantTypes: client.grantTypes,
    idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
    createdAt: isoTime(client.createdAt),
    updatedAt: isoTime(client.updatedAt),
    secretRotatedAt: client.secretRotatedAt === null ? null : isoTime(client.secretRotatedAt),
    backchannelLogoutUri: client.backchannelLogoutUri,
    origin: client.origin,
    lastUsedAt: client.lastUsedAt === null ? null : isoTime(client.lastUsedAt),
    exchangeResources: client.exchangeResources,
    dpopBoundAccessTokens: client.dpopBoundAccessTokens,
    jwksUri: client.jwksUri,
  };
}

/** The refusal of the rules: INVALID_REDIRECT_URI when a URI list is at fault, else INVALID_CLIENT_METADATA. */
export function clientProblemsError(problems: readonly ClientProblem[]): AppError {
  const errors: FieldError[] = problems.map(({ field, message, reason }) => ({ field, message, reason }));
  const isAboutUris = problems.some((problem) => /^(redirectUris|postLogoutRedirectUris)\b/.test(problem.field));
  return new AppError(isAboutUris ? 'INVALID_REDIRECT_URI' : 'INVALID_CLIENT_METADATA', { errors });
}

export const clientRoutes: FastifyPluginAsyncZod<ClientRouteOptions> = async (app, { oidcClients }) => {

  app.get(
    CLIENTS_API,
    {
      config: adminOnly,
      schema: {
        ...common,
        summary: 'The registered OAuth / OIDC clients, newest first (never their secrets)',
        response: { 200: z.object({ clients: z.array(oidcClient) }).meta({ id: 'OidcClientList' }), ...guarded },
      },
    },
    async () => ({ clients: (await oidcClients.list()).map(toClientBody) }),
  );

  app.get(
    `${CLIENTS_API}/:id`,
    {
      config: adminOnly,
      schema: { ...common, summary: 'One client (never its secret)', params: clientParams, response: { 200: oidcClient, ...guarded, ...notFound } },
    },
    async (request) => {
      const client = await oidcClients.show(request.params.id);
      if (client === null) throw new AppError('CLIENT_NOT_FOUND');
      return toClientBody(client);
    },
  );

  app.post(
    CLIENTS_API,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'Register a client; a confidential one’s secret is in this answer only',
        description: 'The secret is shown this once and stored only as a hash: keep it now. A public client gets none (`clientSecret` is absent). Audited as `oidc_client.created`.',
        body: createClientBody,
        response: {
          201: z
            .object({ client: oidcClient, clientSecret: z.string().optional().describe('Confidential clients only: shown this once') })
            .meta({ id: 'OidcClientCreated' }),
          ...bodyErrorResponses,
          ...guarded,
          ...invalid,
        },
      },
    },
    async (request, reply) => {
      const { name, redirectUris, postLogoutRedirectUris, grantTypes, public: isPublic, firstParty, idTokenSignedResponseAlg, backchannelLogoutUri, exchangeResources, dpopBoundAccessTokens, jwksUri } = request.body;
      const result = await oidcClients.create(
        {
          name,
          ...(redirectUris !== undefined && { redirectUris }),
          ...(postLogoutRedirectUris !== undefined && { postLogoutRedirectUris }),
          ...(grantTypes !== undefined && { grantTypes }),
          ...(isPublic !== undefined && { isPublic }),
          ...(firstParty !== undefined && { isFirstParty: firstParty }),
          ...(idTokenSignedResponseAlg !== undefined && { idTokenSignedResponseAlg }),
          ...(backchannelLogoutUri !== undefined && { backchannelLogoutUri }),
          ...(exchangeResources !== undefined && { exchangeResources }),
          ...(dpopBoundAccessTokens !== undefined && { dpopBoundAccessTokens }),
          ...(jwksUri !== undefined && { jwksUri }),
        },
        actor(request),
      );
      if (!result.ok) throw clientProblemsError(result.problems);
      reply.header('cache-control', 'no-store');
      return reply.code(201).send({ client: toClientBody(result.client), ...(result.clientSecret !== undefined && { clientSecret: result.clientSecret }) });
    },
  );

  app.patch(
    `${CLIENTS_API}/:id`,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'Change a client’s name, redirect URIs or exchange policy (each list replaced whole)',
        description: 'The same rules as registering. Its type, grant types and algorithm stay: register a new client to change those. Audited as `oidc_client.updated`.',
        params: clientParams,
        body: updateClientBody,
        response: { 200: oidcClient, ...bodyErrorResponses, ...guarded, ...notFound, ...invalid },
      },
    },
    async (request) => {
      const { name, redirectUris, postLogoutRedirectUris, backchannelLogoutUri, exchangeResources } = request.body;
      const changes = {
        ...(name !== undefined && { name }),
        ...(redirectUris !== undefined && { redirectUris }),
        ...(postLogoutRedirectUris !== undefined && { postLogoutRedirectUris }),
        ...(backchannelLogoutUri !== undefined && { backchannelLogoutUri }),
        ...(exchangeResources !== undefined && { exchangeResources }),
      };
      const result = await oidcClients.update(request.params.id, changes, actor(request));
      if (result.ok) return toClientBody(result.client);
      if (result.reason === 'NOT_FOUND') throw new AppError('CLIENT_NOT_FOUND');
      throw clientProblemsError(result.problems);
    },
  );

  app.post(
    `${CLIENTS_API}/:id/rotate-secret`,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'A new secret for a confidential client: the old one stops working at once',
        description: 'The new secret is in this answer only. Audited as `oidc_client.secret_rotated`.',
        params: clientParams,
        response: {
          200: z.object({ clientId: z.string(), clientSecret: z.string() }).meta({ id: 'OidcClientSecret' }),
          ...guarded,
          ...notFound,
          409: errorResponse.describe('A public client has no secret (PUBLIC_CLIENT_HAS_NO_SECRET), nor has one that authenticates with its keys (KEY_CLIENT_HAS_NO_SECRET)'),
        },
      },
    },
    async (request, reply) => {
      const result = await oidcClients.rotateSecret(request.params.id, actor(request));
      if (!result.ok) throw new AppError(result.reason === 'PUBLIC_CLIENT' ? 'PUBLIC_CLIENT_HAS_NO_SECRET' : result.reason === 'KEY_CLIENT' ? 'KEY_CLIENT_HAS_NO_SECRET' : 'CLIENT_NOT_FOUND');
      reply.header('cache-control', 'no-store');
      return { clientId: result.client.id, clientSecret: result.clientSecret };
    },
  );

  app.delete(
    `${CLIENTS_API}/:id`,
    {
      config: adminChange,
      schema: {
        ...common,
        summary: 'Delete a client: the provider no longer knows it',
        description: 'Audited as `oidc_client.deleted`.',
        params: clientParams,
        response: { 200: z.object({ ok: z.literal(true) }), ...guarded, ...notFound },
      },
    },
    async (request) => {
      if (!(await oidcClients.delete(request.params.id, actor(request)))) throw new AppError('CLIENT_NOT_FOUND');
      return { ok: true as const };
    },
  );
};
