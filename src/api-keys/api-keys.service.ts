/**
 * API keys: issued (shown once; only the SHA-256 kept), listed, revoked at once. A personal key acts
 * as its owner narrowed to the roles and scopes chosen at creation, never more than the owner holds
 * now (`api-key-use.ts` reads the owner at every use); ADMIN only through the `admin` scope, which
 * only an administrator's own key (or one an administrator makes for an administrator) may carry.
 * An organization key acts for its organization with one organization role (never OWNER), made by
 * an OWNER or ADMIN of it (or an operator), and survives its creator leaving or being deleted.
 * Every creation and revocation is audited (`api_key.created`, `api_key.revoked`) in its
 * transaction, with ids, kind, roles and scopes: never the key.
 */
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { Db } from '../storage/database.ts';
import type { UserService } from '../users/user.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { OPERATOR, OWNER } from '../organizations/organizations.model.ts';
import type { ApiKeysConfig } from './api-keys.config.ts';
import { hashApiKey, newApiKey } from './key-format.ts';
import * as store from './api-keys.store.ts';
import { PURGE_AFTER_MS } from './api-keys.purge.ts';
import { ADMIN_SCOPE, MAX_ACTIVE_KEYS, MAX_NAME_LENGTH, MAX_SCOPES, ROLE_PATTERN, SCOPE_PATTERN, toView, type ApiKeyOwner, type ApiKeyView, type CreateRefusal } from './api-keys.model.ts';

export interface NewKeyInput {
  name: string;
  /** Seconds from now; API_KEY_DEFAULT_TTL when left out. */
  ttlSeconds?: number | undefined;
  /** Personal: among the owner's roles (not ADMIN: that is the `admin` scope). Organization: one role in it. */
  roles?: readonly string[] | undefined;
  scopes?: readonly string[] | undefined;
  /** A limit of its own (`points/seconds`); RATE_LIMIT_API_KEY when left out. */
  rateLimit?: { points: number; durationSeconds: number } | undefined;
}

/** Who creates or revokes: a person (their roles and memberships decide), or an operator (the admin API for another's key, the CLI). */
export type KeyActor = { readonly userId: string; readonly asAdmin?: boolean } | 'operator';

export type CreateKeyResult = { ok: true; key: ApiKeyView; secret: string } | { ok: false; reason: CreateRefusal };

export type ApiKeysService = ReturnType<typeof createApiKeysService>;

export function createApiKeysService(deps: { db: Db; clock: Clock; audit: AuditService; users: UserService; organizations: OrganizationsService; config: ApiKeysConfig }) {
  const { db, clock, audit, users, organizations, config } = deps;
  const actorId = (actor: KeyActor) => (actor === 'operator' ? null : actor.userId);

  /** Whether `actor` may manage the keys of `owner`: the person themself, an organization's OWNER or ADMIN, an administrator or operator. */
  async function mayManage(actor: KeyActor, owner: ApiKeyOwner): Promise<boolean> {
    if (actor === 'operator' || actor.asAdmin === true) return true;
    if ('userId' in owner) return owner.userId === actor.userId;
    const found = await organizations.get(owner.organizationId, { userId: actor.userId });
    return found !== null && (found.role === OWNER || found.role === 'ADMIN');
  }

  function checkCommon(input: NewKeyInput): CreateRefusal | { ttlSeconds: number; name: string; scopes: string[] } {
    if (!config.enabled) return 'API_KEYS_DISABLED';
    const name = input.name.trim();
    const scopes = [...new Set(input.scopes ?? [])];
    if (name === '' || name.length > MAX_NAME_LENGTH || scopes.length > MAX_SCOPES || scopes.some((scope) => !SCOPE_PATTERN.test(scope))) return 'VALIDATION_ERROR';
    if ((input.roles ?? []).some((role) => !ROLE_PATTERN.test(role))) return 'VALIDATION_ERROR';
    const ttlSeconds = input.ttlSeconds ?? config.defaultTtlSeconds;
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 60) return 'VALIDATION_ERROR';
    if (ttlSeconds > config.maxTtlSeconds) return 'API_KEY_TTL_TOO_LONG';
    return { ttlSeconds, name, scopes };
  }

  async function issue(trx: Db, owner: ApiKeyOwner, actor: KeyActor, fields: { name: string; ttlSeconds: number; scopes: string[]; roles: string[]; rateLimit: NewKeyInput['rateLimit'] }, source: AuditSource): Promise<CreateKeyResult> {
    const now = clock();
    if ((await store.countActive(trx, owner, now)) >= MAX_ACTIVE_KEYS) return { ok: false, reason: 'API_KEY_LIMIT_REACHED' };
    const kind = 'userId' in owner ? 'personal' : 'organization';
    const { key, id } = newApiKey(kind);
    const row: store.ApiKeyRow = {
      id,
      kind,
      user_id: 'userId' in owner ? owner.userId : null,
      organization_id: 'organizationId' in owner ? owner.organizationId : null,
      created_by: actorId(actor),
      name: fields.name,
      secret_hash: hashApiKey(key),
      scopes: JSON.stringify(fields.scopes),
      roles: JSON.stringify(fields.roles),
      rate_limit: fields.rateLimit === undefined ? null : `${fields.rateLimit.points}/${fields.rateLimit.durationSeconds}`,
      created_at: now,
      expires_at: now + fields.ttlSeconds * 1000,
      revoked_at: null,
      revoked_by: null,
      last_used_at: null,
      last_used_ip: null,
    };
    await store.insertKey(trx, row);
    const view = toView(row, now);
    await audit.record({ type: 'api_key.created', userId: view.userId, source, details: detailsOf(view) }, { db: trx });
    return { ok: true, key: view, secret: key };
  }

  // Every member is asynchronous (no `config` here: the pages read it from the config itself), so
  // the registry holds a stand-in that imports this file at the first call (api-keys.module.ts).
  return {
    /** A personal key for `userId`, made by them (or by an administrator or operator). */
    async createPersonal(userId: string, actor: KeyActor, input: NewKeyInput, source: AuditSource): Promise<CreateKeyResult> {
      const common = checkCommon(input);
      if (typeof common === 'string') return { ok: false, reason: common };
      if (!(await mayManage(actor, { userId }))) return { ok: false, reason: 'API_KEY_NOT_FOUND' };
      const owner = await users.findUserById(userId);
      if (owner === null || owner.disabledAt !== null) return { ok: false, reason: 'API_KEY_NOT_FOUND' };
      const roles = [...new Set(input.roles ?? [])];
      // Never more than the owner holds; ADMIN only as the explicit scope, for an administrator, chosen by an administrator.
      if (roles.includes(ADMIN_ROLE) || roles.some((role) => !owner.roles.includes(role))) return { ok: false, reason: 'API_KEY_SCOPE_NOT_ALLOWED' };
      if (common.scopes.includes(ADMIN_SCOPE)) {
        const creatorIsAdmin = actor === 'operator' || (await users.findUserById(actor.userId))?.roles.includes(ADMIN_ROLE) === true;
        if (!owner.roles.includes(ADMIN_ROLE) || !creatorIsAdmin) return { ok: false, reason: 'API_KEY_SCOPE_NOT_ALLOWED' };
      }
      return db.transaction().execute((trx) => issue(trx, { userId }, actor, { ...common, roles, rateLimit: input.rateLimit }, source));
    },

    /** An organization key with one role in it (never OWNER; never the admin scope), made by its OWNER or ADMIN (or an administrator or operator). */
    async createForOrganization(organizationId: string, actor: KeyActor, input: NewKeyInput, source: AuditSource): Promise<CreateKeyResult> {
      const common = checkCommon(input);
      if (typeof common === 'string') return { ok: false, reason: common };
      const organization = await organizations.get(organizationId, actor === 'operator' || actor.asAdmin === true ? OPERATOR : { userId: actor.userId });
      // To anyone who is not a member, an organization does not exist (as its own routes answer).
      if (organization === null) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
      if (!(await mayManage(actor, { organizationId }))) return { ok: false, reason: 'ORGANIZATION_ROLE_REQUIRED' };
      const roles = [...new Set(input.roles ?? ['MEMBER'])];
      if (roles.length !== 1 || roles[0] === OWNER || common.scopes.includes(ADMIN_SCOPE)) return { ok: false, reason: 'API_KEY_SCOPE_NOT_ALLOWED' };
      return db.transaction().execute((trx) => issue(trx, { organizationId }, actor, { ...common, roles, rateLimit: input.rateLimit }, source));
    },

    /**
     * The keys of one owner (or every key, for administrators), newest first; null when `actor` may
     * not see them. `whyNot` tells an organization's non-member (ORGANIZATION_NOT_FOUND) from a
     * member whose role is not enough.
     */
    async list(owner: ApiKeyOwner | 'all', actor: KeyActor): Promise<ApiKeyView[] | null> {
      if (owner === 'all' ? actor !== 'operator' && actor.asAdmin !== true : !(await mayManage(actor, owner))) return null;
      const now = clock();
      return (await store.listKeys(db, owner)).map((row) => toView(row, now));
    },

    /** Why `actor` may not see an organization's keys: not a member (it does not exist for them), or a role too small. */
    async whyNot(organizationId: string, actor: { userId: string }): Promise<'ORGANIZATION_NOT_FOUND' | 'ORGANIZATION_ROLE_REQUIRED'> {
      return (await organizations.get(organizationId, actor)) === null ? 'ORGANIZATION_NOT_FOUND' : 'ORGANIZATION_ROLE_REQUIRED';
    },

    async show(id: string): Promise<ApiKeyView | null> {
      const row = await store.findKey(db, id);
      return row === undefined ? null : toView(row, clock());
    },

    /**
     * Revokes a key at once (its next use is refused): by its owner, an OWNER or ADMIN of its
     * organization, an administrator or operator. `owner`, when given, must be the key's (a route
     * nested under a person or an organization). Revoking a revoked key is a success that records nothing.
     */
    async revoke(id: string, actor: KeyActor, source: AuditSource, owner?: ApiKeyOwner): Promise<{ ok: true; key: ApiKeyView } | { ok: false; reason: 'API_KEY_NOT_FOUND' }> {
      // Who may revoke it is judged before the transaction: the membership read goes through the
      // organizations service's own connection, and a transaction waiting on a second connection
      // of the pool would starve it under a burst of revocations. A key's owner never changes.
      const found = await store.findKey(db, id);
      if (found === undefined) return { ok: false, reason: 'API_KEY_NOT_FOUND' };
      const keyOwner: ApiKeyOwner = found.user_id !== null ? { userId: found.user_id } : { organizationId: found.organization_id ?? '' };
      const matchesOwner = owner === undefined || ('userId' in owner ? found.user_id === owner.userId : found.organization_id === owner.organizationId);
      if (!matchesOwner || !(await mayManage(actor, keyOwner))) return { ok: false, reason: 'API_KEY_NOT_FOUND' };
      return db.transaction().execute(async (trx) => {
        // Read again in the transaction: revoked (or purged) in between is seen here.
        const row = await store.findKey(trx, id);
        if (row === undefined) return { ok: false, reason: 'API_KEY_NOT_FOUND' } as const;
        const now = clock();
        if (await store.markRevoked(trx, id, now, actorId(actor))) {
          const view = toView({ ...row, revoked_at: now }, now);
          await audit.record({ type: 'api_key.revoked', userId: view.userId, source, details: detailsOf(view) }, { db: trx });
          return { ok: true, key: view } as const;
        }
        return { ok: true, key: toView(row, now) } as const;
      });
    },

    /** Keys revoked or expired more than 30 days ago go (the audit log keeps their history). */
    async purge(): Promise<void> {
      await store.purgeEndedBefore(db, clock() - PURGE_AFTER_MS);
    },
  };
}

/** What the audit log and webhooks get of a key: ids, kind, roles, scopes; never the key or its hash. */
export function detailsOf(key: ApiKeyView): Record<string, unknown> {
  return { keyId: key.id, kind: key.kind, name: key.name, organizationId: key.organizationId, roles: key.roles, scopes: key.scopes, expiresAt: key.expiresAt };
}
