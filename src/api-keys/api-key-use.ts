/**
 * Using a key: Gatehouse's credential resolver (a personal key's caller: its owner, narrowed), the
 * introspection answer for downstream apps (RFC 7662 shape), the per-key rate limit (counted in
 * leases, so a busy key does not write its shared counter on every request: key-rate-lease.ts), the last use
 * (time and address, written at most once a minute per key and instance: no write per request),
 * and the audit of failed uses (`api_key.use_failed`, at most once a minute per key and reason, so
 * a client retrying a dead key cannot flood the log). Every authentication is counted, accepted or
 * not (`count`: api-keys.metrics.ts, memory only). The owner is as they are at every use (read
 * again, or on SQLite kept only while nothing was committed: below): a demoted or disabled owner's
 * key loses what they lost, at once.
 *
 * On a SQLite file the key's row and its owner are kept between uses while nothing at all has been
 * committed to the database since they were read (SQLite's change counter, storage/database.ts
 * `changeCounterOf`, read before each use): a revoked key, a disabled or demoted owner, a change
 * by the CLI or another worker all move it, so "at once" holds. The secret is checked and the
 * expiry compared at every use.
 */
import type { AuditService } from '../audit/audit.service.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { changeCounterOf, watchChanges, type Db } from '../storage/database.ts';
import type { User } from '../users/user.service.ts';
import type { RateLimiters } from '../http/rate-limit.ts';
import { leasedLimiter, type LeasedLimiter } from './key-rate-lease.ts';
import type { AuthContext } from '../sessions/session.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import type { ApiKeysConfig } from './api-keys.config.ts';
import { apiKeyMatches, parseApiKey } from './key-format.ts';
import * as store from './api-keys.store.ts';
import { ADMIN_SCOPE, API_KEY_AMR, KEY_SESSION_PREFIX, parseList, parseRateLimit } from './api-keys.model.ts';
import { outcomeOfFailure, type ApiKeyVia, type CountKeyUse } from './api-keys.metrics.ts';

/** How often a key's last use is written, per instance. */
export const RECORD_USE_EVERY_MS = 60_000;
const MAX_REMEMBERED = 10_000;

export type UseFailure = 'UNKNOWN_SECRET' | 'REVOKED' | 'EXPIRED' | 'OWNER_DISABLED' | 'ORGANIZATION_KEY' | 'RATE_LIMITED' | 'NOT_ALLOWED' | 'SCOPE_REQUIRED';

/** What a key is found to be at one use: its row and what it may do now. */
export interface ResolvedKey {
  row: store.ApiKeyRow;
  /** Personal: the owner's roles the key keeps now (ADMIN through the admin scope). Organization: its role. */
  roles: string[];
  scopes: string[];
}

/** The RFC 7662 answer for a key (`active: false` and nothing else for any key that grants nothing). */
export type Introspection =
  | { active: false }
  | {
      active: true;
      token_type: 'api_key';
      key_id: string;
      kind: 'personal' | 'organization';
      scope: string;
      roles: string[];
      sub?: string;
      org?: { id: string; slug: string; roles: string[] };
      iat: number;
      exp: number;
    };

/** A bounded map (oldest out first). */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= MAX_REMEMBERED && !map.has(key)) map.delete(map.keys().next().value!);
  map.set(key, value);
}

export type ApiKeyUse = ReturnType<typeof createApiKeyUse>;

export function createApiKeyUse(deps: {
  db: Db;
  clock: Clock;
  logger: Logger;
  audit: AuditService;
  users: UserService;
  organizations: OrganizationsService;
  rateLimiters: RateLimiters;
  config: ApiKeysConfig;
  /** Counts each authentication's outcome (the metrics; nothing when they are off). */
  count?: CountKeyUse;
}) {
  const { db, clock, logger, audit, users, organizations, rateLimiters, config } = deps;
  const count = deps.count ?? (() => {});
  const lastWritten = new Map<string, number>();
  const lastAudited = new Map<string, number>();
  const limiters = new Map<string, LeasedLimiter>();
  /** Each key's own limit as last read (`find` reads the row anyway), so counting costs no read. */
  const ownLimits = new Map<string, string | null>();
  /** Each key's scopes as last read (by `find`, earlier in the same request), for the guard. */
  const ownScopes = new Map<string, string[]>();
  /** SQLite: keys' rows and owners as read, while the change counter stays where it was. */
  const counter = changeCounterOf(db);
  const hasChanged = counter === undefined ? undefined : watchChanges(counter);
  const keptReads = new Map<string, { row: store.ApiKeyRow; owner?: User | null }>();
  /** Moves each time the kept reads are dropped: a read begun before a drop is not kept. */
  let epoch = 0;

  /** The key's row (and owner, once read) kept since no commit, or a fresh entry to fill. */
  async function readKey(id: string): Promise<{ row: store.ApiKeyRow; owner?: User | null } | undefined> {
    if (hasChanged?.() === true) {
      epoch++;
      keptReads.clear();
    }
    const kept = keptReads.get(id);
    if (kept !== undefined) return kept;
    const startedIn = epoch;
    const row = await store.findKey(db, id);
    if (row === undefined) return undefined;
    const read = { row };
    // Kept only on SQLite, and only if nothing was dropped while it was read (the next use reads the counter again anyway).
    if (hasChanged !== undefined && startedIn === epoch) remember(keptReads, id, read);
    return read;
  }

  async function ownerOf(read: { row: store.ApiKeyRow; owner?: User | null }): Promise<User | null> {
    if (read.owner !== undefined) return read.owner;
    const startedIn = epoch;
    const owner = read.row.user_id === null ? null : await users.findUserById(read.row.user_id);
    if (startedIn === epoch) read.owner = owner;
    return owner;
  }

  /** The limiter of a key's limit (the default, or its own), counted in leases (key-rate-lease.ts). */
  function limiterFor(rateLimit: string | null): LeasedLimiter {
    const own = parseRateLimit(rateLimit);
    const limit = own ?? config.perKey;
    const name = own === null ? 'api-key' : `api-key-${limit.points}-${limit.durationSeconds}`;
    let limiter = limiters.get(name);
    if (limiter === undefined) {
      limiter = leasedLimiter(rateLimiters.create(name, limit), limit.points, clock);
      limiters.set(name, limiter);
    }
    return limiter;
  }

  /** Counts a failed use of a known key, and records it at most once a minute per key and reason (never the key). */
  async function failed(row: Pick<store.ApiKeyRow, 'id' | 'user_id' | 'kind' | 'organization_id'>, reason: UseFailure, ip: string | null = null, via: ApiKeyVia = 'api'): Promise<void> {
    count(via, outcomeOfFailure(reason));
    const now = clock();
    const mark = `${row.id}:${reason}`;
    if (now - (lastAudited.get(mark) ?? Number.NEGATIVE_INFINITY) < RECORD_USE_EVERY_MS) return;
    remember(lastAudited, mark, now);
    try {
      await audit.record({ type: 'api_key.use_failed', userId: row.user_id, reason, source: { ...SYSTEM_SOURCE, ip }, details: { keyId: row.id, kind: row.kind, organizationId: row.organization_id } });
    } catch (error) {
      logger.error({ err: error, keyId: row.id }, 'api keys: could not record a failed use');
    }
  }

  /**
   * The key a token presented `via` is, with what it may do now; null when it grants nothing
   * (counted; audited when the key is known). With API keys off nothing is a key, and nothing counts.
   */
  async function find(token: string, via: ApiKeyVia): Promise<ResolvedKey | null> {
    if (!config.enabled) return null;
    const parsed = parseApiKey(token);
    const read = parsed === null ? undefined : await readKey(parsed.id);
    const row = read?.row;
    if (row === undefined || row.kind !== parsed!.kind) return count(via, 'unknown'), null;
    remember(ownLimits, row.id, row.rate_limit);
    if (!apiKeyMatches(token, row.secret_hash)) return void (await failed(row, 'UNKNOWN_SECRET', null, via)), null;
    if (row.revoked_at !== null) return void (await failed(row, 'REVOKED', null, via)), null;
    if (Number(row.expires_at) <= clock()) return void (await failed(row, 'EXPIRED', null, via)), null;
    const scopes = parseList(row.scopes);
    remember(ownScopes, row.id, scopes);
    const chosen = parseList(row.roles);
    if (row.kind === 'organization') return { row, roles: chosen.slice(0, 1), scopes };
    const owner = await ownerOf(read!);
    if (owner === null || owner.disabledAt !== null) return void (await failed(row, 'OWNER_DISABLED', null, via)), null;
    // What the owner holds now, of what the key was given; ADMIN only through the admin scope.
    const roles = chosen.filter((role) => role !== ADMIN_ROLE && owner.roles.includes(role));
    if (scopes.includes(ADMIN_SCOPE) && owner.roles.includes(ADMIN_ROLE)) roles.push(ADMIN_ROLE);
    return { row, roles, scopes };
  }

  /** Writes the key's last use (and address, when known) at most once a minute per key on this instance. */
  async function recordUse(keyId: string, ip: string | null): Promise<void> {
    const now = clock();
    if (now - (lastWritten.get(keyId) ?? Number.NEGATIVE_INFINITY) < RECORD_USE_EVERY_MS) return;
    remember(lastWritten, keyId, now);
    try {
      await store.recordUse(db, keyId, now, ip);
    } catch (error) {
      logger.warn({ err: error, keyId }, 'api keys: could not record a use');
    }
  }

  return {
    find,
    failed,

    /**
     * Gatehouse's resolver: a personal key's caller (its owner, narrowed; `amr: ['api_key']` and an
     * `authTime` of 0, so no route asking for a recent sign-in or second factor accepts it). An
     * organization key speaks for no person: Gatehouse's own API, which acts for people, refuses it.
     */
    async resolve(token: string): Promise<AuthContext | null> {
      const found = await find(token, 'api');
      if (found === null) return null;
      if (found.row.kind !== 'personal' || found.row.user_id === null) return void (await failed(found.row, 'ORGANIZATION_KEY')), null;
      return { userId: found.row.user_id, sessionId: `${KEY_SESSION_PREFIX}${found.row.id}`, roles: found.roles, amr: [API_KEY_AMR], authTime: 0, accessTokenExpiresAt: Number(found.row.expires_at) };
    },

    /** The RFC 7662 answer for a presented key (anything else: `active: false`). */
    async introspect(token: string): Promise<Introspection> {
      const found = await find(token, 'introspection');
      if (found === null) return { active: false };
      const { row, roles, scopes } = found;
      const base = { active: true as const, token_type: 'api_key' as const, key_id: row.id, scope: scopes.join(' '), roles, iat: Math.floor(Number(row.created_at) / 1000), exp: Math.floor(Number(row.expires_at) / 1000) };
      const organization = row.kind === 'personal' ? null : await organizations.find(row.organization_id ?? '');
      // An organization key outliving its organization (being deleted) grants nothing: no such key.
      if (row.kind === 'organization' && organization === null) return count('introspection', 'unknown'), { active: false };
      await this.accept(row.id, null, 'introspection');
      if (organization === null) return { ...base, kind: 'personal', sub: row.user_id! };
      return { ...base, kind: 'organization', org: { id: organization.id, slug: organization.slug, roles } };
    },

    /** Counts one request against the key's limit: the seconds to wait when over it, else null. */
    async consume(key: { id: string; userId: string }): Promise<number | null> {
      const rateLimit = ownLimits.has(key.id) ? ownLimits.get(key.id)! : ((await store.findKey(db, key.id))?.rate_limit ?? null);
      const wait = await limiterFor(rateLimit).consume(key.id);
      if (wait !== null) await failed({ id: key.id, user_id: key.userId, kind: 'personal', organization_id: null }, 'RATE_LIMITED');
      return wait;
    },

    /** The scopes of a key resolved earlier in this request (read again if this instance forgot them). */
    async scopesOf(keyId: string): Promise<string[]> {
      return ownScopes.get(keyId) ?? parseList((await store.findKey(db, keyId))?.scopes ?? '[]');
    },

    /** A use that passed every check: counted as accepted, and written as the key's last use (see `recordUse`). */
    async accept(keyId: string, ip: string | null, via: ApiKeyVia): Promise<void> {
      count(via, 'accepted');
      await recordUse(keyId, ip);
    },
  };
}
