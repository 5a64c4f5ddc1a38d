/**
 * `POST /api/auth/keys/introspect`: RFC 7662 token introspection for API keys, for downstream apps
 * (gatehouse-protect's `apiKeys` option). The caller is a confidential client of Gatehouse's
 * registry (`gatehouse clients`), authenticated with its id and secret (HTTP Basic, or
 * `client_id` / `client_secret` in the form); the body is `token=<key>` (form or JSON). The answer
 * is `{"active": false}` for anything that grants nothing (unknown, malformed, revoked, expired,
 * its owner disabled), else the key's id, kind, scopes, roles, subject or organization and
 * expiry: never the key. Registered in the browser scope (form bodies parse) and outside the CSRF
 * check: the client authenticates every request, from its own server.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { access } from '../authorization/access.ts';
import { errorResponse } from '../http/schemas.ts';
import type { OidcClientsService } from '../oidc-clients/clients.service.ts';
import { clientSecretMatches } from '../oidc-clients/client-credentials.ts';
import type { ApiKeyUse } from './api-key-use.ts';

export const INTROSPECTION_PATH = '/api/auth/keys/introspect';

/** `Authorization: Basic …` as RFC 6749 §2.3.1 writes it (each part form-encoded), or null. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | null {
  const match = header === undefined ? null : /^Basic ([A-Za-z0-9+/=]{1,1000})$/i.exec(header.trim());
  if (match === null) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) return null;
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return null;
  }
}

const body = z
  .object({
    token: z.string().max(200).optional(),
    token_type_hint: z.string().max(64).optional(),
    client_id: z.string().max(200).optional(),
    client_secret: z.string().max(200).optional(),
  })
  .meta({ id: 'ApiKeyIntrospectionRequest' });

const answer = z
  .object({
    active: z.boolean(),
    token_type: z.literal('api_key').optional(),
    key_id: z.string().optional(),
    kind: z.enum(['personal', 'organization']).optional(),
    scope: z.string().optional().describe('The key’s scopes, space-separated'),
    roles: z.array(z.string()).optional().describe('Personal: the roles it keeps of its owner now. Organization: its role there'),
    sub: z.string().optional().describe('The owner of a personal key'),
    org: z.object({ id: z.string(), slug: z.string(), roles: z.array(z.string()) }).optional().describe('The organization of an organization key'),
    iat: z.number().int().optional(),
    exp: z.number().int().optional(),
  })
  .meta({ id: 'ApiKeyIntrospection' });

export const introspectionRoutes: FastifyPluginAsyncZod<{ use: ApiKeyUse; oidcClients: OidcClientsService }> = async (app, { use, oidcClients }) => {
  app.post(
    INTROSPECTION_PATH,
    {
      config: { access: access.anyone(), skipCsrf: true },
      schema: {
        tags: ['api-keys'],
        summary: 'Introspect an API key (RFC 7662), for downstream apps',
        description: 'Authenticated as a confidential OIDC client (HTTP Basic). `{"active": false}` for any key that grants nothing.',
        body,
        response: { 200: answer, 401: errorResponse.describe('The client could not be authenticated (INTROSPECTION_CLIENT_INVALID)') },
      },
    },
    async (request, reply) => {
      const credentials = basicCredentials(request.headers.authorization) ?? (request.body.client_id !== undefined && request.body.client_secret !== undefined ? { id: request.body.client_id, secret: request.body.client_secret } : null);
      const metadata = credentials === null ? undefined : await oidcClients.providerMetadata(credentials.id);
      const hash = metadata?.client_secret;
      if (credentials === null || typeof hash !== 'string' || !clientSecretMatches(credentials.secret, hash)) {
        reply.header('www-authenticate', 'Basic realm="gatehouse"');
        throw new AppError('INTROSPECTION_CLIENT_INVALID');
      }
      reply.header('cache-control', 'no-store');
      return use.introspect(request.body.token ?? '');
    },
  );
};
