/**
 * SCIM tokens and role mappings, per organization. A token is `gatehouse_scim_` and 256 random
 * bits (base64url); only its SHA-256 is stored, so it is shown once, at creation or rotation.
 * Rotating makes a new token (same name) and revokes the old one; revoked tokens stay listed. A
 * token authenticates the SCIM routes of its organization and nothing else: it is not a Gatehouse
 * credential (no credential resolver knows it). Every change records its domain event, with ids
 * only, never the token.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import { isValidRole } from '../users/user.service.ts';
import * as store from './scim.store.ts';

export const SCIM_TOKEN_PREFIX = 'gatehouse_scim_';
export const MAX_ACTIVE_TOKENS = 10;
const TOKEN_PATTERN = /^gatehouse_scim_[A-Za-z0-9_-]{43}$/;
/** A token's last use is written at most this often (every request would be a write). */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface ScimToken {
  id: string;
  organizationId: string;
  name: string | null;
  createdBy: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export interface RoleMapping {
  group: string;
  role: string;
}

/** Who a SCIM request speaks for: the organization of its token. */
export interface ScimCaller {
  tokenId: string;
  organizationId: string;
}

export type ScimTokensService = ReturnType<typeof createScimTokensService>;

const toToken = (row: store.TokenRow): ScimToken => ({
  id: row.id,
  organizationId: row.organization_id,
  name: row.name,
  createdBy: row.created_by,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

export function createScimTokensService(deps: { db: Db; clock: Clock; audit: AuditService }) {
  const { db, clock, audit } = deps;

  async function issue(trx: Db, organizationId: string, name: string | null, source: AuditSource): Promise<{ token: string; record: ScimToken }> {
    const token = `${SCIM_TOKEN_PREFIX}${randomSecret(32)}`;
    const row: store.TokenRow = { id: randomId(), organization_id: organizationId, name, token_hash: sha256Base64url(token), created_by: source.actorUserId, created_at: clock(), last_used_at: null, revoked_at: null };
    await store.insertToken(trx, row);
    return { token, record: toToken(row) };
  }

  return {
    async list(organizationId: string): Promise<ScimToken[]> {
      return (await store.listTokens(db, organizationId)).map(toToken);
    },

    /** A new token for the organization (the caller has checked who may); refused past MAX_ACTIVE_TOKENS. */
    async create(organizationId: string, name: string | null, source: AuditSource): Promise<{ ok: true; token: string; record: ScimToken } | { ok: false; reason: 'SCIM_TOKEN_LIMIT_REACHED' }> {
      return db.transaction().execute(async (trx) => {
        if ((await store.countActiveTokens(trx, organizationId)) >= MAX_ACTIVE_TOKENS) return { ok: false as const, reason: 'SCIM_TOKEN_LIMIT_REACHED' as const };
        const issued = await issue(trx, organizationId, name, source);
        await audit.record({ type: 'scim.token_created', source, details: { organizationId, tokenId: issued.record.id } }, { db: trx });
        return { ok: true as const, ...issued };
      });
    },

    /** A new token in place of an active one, which is revoked in the same transaction. */
    async rotate(organizationId: string, tokenId: string, source: AuditSource): Promise<{ ok: true; token: string; record: ScimToken } | { ok: false; reason: 'SCIM_TOKEN_NOT_FOUND' }> {
      return db.transaction().execute(async (trx) => {
        const old = await store.findActiveToken(trx, organizationId, tokenId);
        if (old === undefined || !(await store.revokeToken(trx, old.id, clock()))) return { ok: false as const, reason: 'SCIM_TOKEN_NOT_FOUND' as const };
        const issued = await issue(trx, organizationId, old.name, source);
        await audit.record({ type: 'scim.token_rotated', source, details: { organizationId, tokenId: issued.record.id, previousTokenId: old.id } }, { db: trx });
        return { ok: true as const, ...issued };
      });
    },

    async revoke(organizationId: string, tokenId: string, source: AuditSource): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const token = await store.findActiveToken(trx, organizationId, tokenId);
        if (token === undefined || !(await store.revokeToken(trx, token.id, clock()))) return false;
        await audit.record({ type: 'scim.token_revoked', source, details: { organizationId, tokenId } }, { db: trx });
        return true;
      });
    },

    /** The organization an active token is for, or null (a malformed, unknown or revoked token). Records its use. */
    async authenticate(token: string): Promise<ScimCaller | null> {
      if (!TOKEN_PATTERN.test(token)) return null;
      const row = await store.findTokenByHash(db, sha256Base64url(token));
      if (row === undefined || row.revoked_at !== null) return null;
      const now = clock();
      if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS) await store.touchToken(db, row.id, now);
      return { tokenId: row.id, organizationId: row.organization_id };
    },

    async roleMappings(organizationId: string): Promise<RoleMapping[]> {
      return (await store.listRoleMappings(db, organizationId)).map((row) => ({ group: row.group_name, role: row.role }));
    },

    /**
     * Replaces the organization's group → role mappings. A group maps to ADMIN, MEMBER or a custom
     * role, never OWNER (ownership stays with people), each group once (names compared case-insensitively).
     */
    async setRoleMappings(organizationId: string, mappings: readonly RoleMapping[], source: AuditSource): Promise<{ ok: true; mappings: RoleMapping[] } | { ok: false; reason: 'SCIM_ROLE_MAPPING_INVALID' }> {
      const rows = mappings.map((mapping) => ({ organization_id: organizationId, group_name: mapping.group.trim(), group_name_key: mapping.group.trim().toLowerCase(), role: mapping.role }));
      const isValid = rows.every((row) => row.group_name !== '' && row.group_name.length <= 256 && isValidRole(row.role) && row.role !== 'OWNER') && new Set(rows.map((row) => row.group_name_key)).size === rows.length;
      if (!isValid) return { ok: false, reason: 'SCIM_ROLE_MAPPING_INVALID' };
      await db.transaction().execute(async (trx) => {
        await store.replaceRoleMappings(trx, organizationId, rows);
        await audit.record({ type: 'scim.role_mappings_changed', source, details: { organizationId, roles: rows.map((row) => row.role) } }, { db: trx });
      });
      return { ok: true, mappings: rows.map((row) => ({ group: row.group_name, role: row.role })) };
    },
  };
}
