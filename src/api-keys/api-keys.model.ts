/** What the api-keys module deals in: a key as lists show it, the owners, the outcomes. No I/O. */
import { keyHint, type ApiKeyKind } from './key-format.ts';
import { parseStringList } from '../lib/json-list.ts';
import type { ApiKeyRow } from './api-keys.store.ts';

/** The scope that lets a personal key carry ADMIN (an administrator's key, chosen explicitly). */
export const ADMIN_SCOPE = 'admin';
/** The scope that lets a personal key change things at Gatehouse (any method but GET, HEAD, OPTIONS); without it, a key reads. */
export const WRITE_SCOPE = 'write';
/** Scopes are short lower-case tokens (`admin`, or what downstream apps ask for: `billing:read`). */
export const SCOPE_PATTERN = /^[a-z][a-z0-9:._-]{0,63}$/;
export const ROLE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;
export const MAX_SCOPES = 20;
export const MAX_NAME_LENGTH = 100;
/** Active keys one person or one organization may hold at once. */
export const MAX_ACTIVE_KEYS = 100;
/** The `amr` of a key's caller (RFC 8176 has none for it): no route asking for a recent sign-in or factor accepts it. */
export const API_KEY_AMR = 'api_key';
/** A key's caller speaks for no session: its `sessionId` is this and the key's id. */
export const KEY_SESSION_PREFIX = 'apikey:';

export type ApiKeyOwner = { readonly userId: string } | { readonly organizationId: string };

export interface ApiKeyView {
  id: string;
  kind: ApiKeyKind;
  name: string;
  /** The key's prefix and id, never its secret: how people recognise it. */
  hint: string;
  userId: string | null;
  organizationId: string | null;
  createdBy: string | null;
  scopes: string[];
  roles: string[];
  /** `points/seconds`, null: the server's RATE_LIMIT_API_KEY. */
  rateLimit: string | null;
  status: 'active' | 'revoked' | 'expired';
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
  lastUsedIp: string | null;
}

export type CreateRefusal = 'API_KEYS_DISABLED' | 'API_KEY_SCOPE_NOT_ALLOWED' | 'API_KEY_TTL_TOO_LONG' | 'API_KEY_LIMIT_REACHED' | 'API_KEY_NOT_FOUND' | 'ORGANIZATION_NOT_FOUND' | 'ORGANIZATION_ROLE_REQUIRED' | 'VALIDATION_ERROR';

/** The `scopes` and `roles` columns. */
export const parseList = parseStringList;

export function toView(row: ApiKeyRow, now: number): ApiKeyView {
  const kind: ApiKeyKind = row.kind === 'organization' ? 'organization' : 'personal';
  return {
    id: row.id,
    kind,
    name: row.name,
    hint: keyHint(kind, row.id),
    userId: row.user_id,
    organizationId: row.organization_id,
    createdBy: row.created_by,
    scopes: parseList(row.scopes),
    roles: parseList(row.roles),
    rateLimit: row.rate_limit,
    status: row.revoked_at !== null ? 'revoked' : Number(row.expires_at) <= now ? 'expired' : 'active',
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    lastUsedIp: row.last_used_ip,
  };
}

/** `points/seconds` of a key's own limit, or null when it has none (or it is malformed). */
export function parseRateLimit(text: string | null): { points: number; durationSeconds: number } | null {
  const match = text === null ? null : /^(\d{1,7})\/(\d{1,6})$/.exec(text);
  if (match === null) return null;
  const points = Number(match[1]);
  const durationSeconds = Number(match[2]);
  return points >= 1 && durationSeconds >= 1 && durationSeconds <= 86_400 ? { points, durationSeconds } : null;
}
