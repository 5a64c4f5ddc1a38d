/** The JSON shapes of the api-keys routes (and so of the OpenAPI document). */
import { z } from 'zod';
import { AppError } from '../errors.ts';
import type { ApiKeyView } from './api-keys.model.ts';
import type { NewKeyInput } from './api-keys.service.ts';
import { MAX_NAME_LENGTH, MAX_SCOPES } from './api-keys.model.ts';
import type { CreateRefusal } from './api-keys.model.ts';

export const apiKeyBody = z
  .object({
    id: z.string().describe('The key id: the 12 characters after the prefix (not secret)'),
    kind: z.enum(['personal', 'organization']),
    name: z.string(),
    hint: z.string().describe('Prefix and id, to recognise the key: never its secret'),
    userId: z.string().nullable().describe('The owner of a personal key'),
    organizationId: z.string().nullable().describe('The organization of an organization key'),
    createdBy: z.string().nullable(),
    scopes: z.array(z.string()),
    roles: z.array(z.string()).describe('Personal: the roles it keeps of its owner (ADMIN through the admin scope). Organization: its role there'),
    rateLimit: z.string().nullable().describe('points/seconds; null: the server default (RATE_LIMIT_API_KEY)'),
    status: z.enum(['active', 'revoked', 'expired']),
    createdAt: z.string().describe('ISO 8601'),
    expiresAt: z.string().describe('ISO 8601'),
    revokedAt: z.string().nullable(),
    lastUsedAt: z.string().nullable().describe('Written at most once a minute'),
    lastUsedIp: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });

export const createKeyBody = z
  .object(
    {
      name: z.string({ error: 'is required' }).trim().min(1, 'is required').max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`),
      expiresInDays: z.number({ error: 'must be a number of days' }).int('must be a whole number of days').min(1).max(3660).optional().describe('Default API_KEY_DEFAULT_TTL; at most API_KEY_MAX_TTL'),
      roles: z.array(z.string().max(64)).max(50).optional().describe('Personal: roles the owner holds (not ADMIN). Organization: exactly one role there (not OWNER); default MEMBER'),
      scopes: z.array(z.string().max(64)).max(MAX_SCOPES).optional().describe('Lower-case tokens for downstream apps; `admin` lets an administrator’s key carry ADMIN'),
      organizationId: z.string().min(1).max(64).optional().describe('Makes an organization key (you are its OWNER or ADMIN)'),
      rateLimit: z
        .object({ points: z.number().int().min(1).max(1_000_000), windowSeconds: z.number().int().min(1).max(86_400) })
        .optional()
        .describe('A limit of its own; default RATE_LIMIT_API_KEY'),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'ApiKeyCreateRequest' });

export type CreateKeyBody = z.infer<typeof createKeyBody>;

export const createdKeyBody = z
  .object({ key: apiKeyBody, secret: z.string().describe('The key itself (gatehouse_pk_… or gatehouse_ok_…): shown this once, never again') })
  .meta({ id: 'ApiKeyCreated' });

export const keyListBody = z.object({ keys: z.array(apiKeyBody) }).meta({ id: 'ApiKeyList' });
export const keyParams = z.object({ id: z.string().min(1).max(64) });

export function toKeyBody(key: ApiKeyView): z.infer<typeof apiKeyBody> {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return { ...key, scopes: [...key.scopes], roles: [...key.roles], createdAt: iso(key.createdAt)!, expiresAt: iso(key.expiresAt)!, revokedAt: iso(key.revokedAt), lastUsedAt: iso(key.lastUsedAt) };
}

export function toNewKeyInput(body: CreateKeyBody): NewKeyInput {
  return {
    name: body.name,
    ...(body.expiresInDays !== undefined && { ttlSeconds: body.expiresInDays * 86_400 }),
    ...(body.roles !== undefined && { roles: body.roles }),
    ...(body.scopes !== undefined && { scopes: body.scopes }),
    ...(body.rateLimit !== undefined && { rateLimit: { points: body.rateLimit.points, durationSeconds: body.rateLimit.windowSeconds } }),
  };
}

/** A refused creation as the HTTP answer. */
export function refusalError(reason: CreateRefusal): AppError {
  return new AppError(reason);
}
