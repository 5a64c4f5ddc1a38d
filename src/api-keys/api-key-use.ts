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
import { thenNow } from '../lib/then-now.ts';
import { changeCounterOf, watchChanges, type Db } from '../storage/database.ts';
import type { User } from '../users/user.service.ts';
import type { RateLimiters, Wait } from '../http/rate-limit.ts';
import { leasedLimiter, type LeasedLimiter } from './key-rate-lease.ts';
import type { AuthContext } from '../sessions/session.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import type { ApiKeysConfig } from './api-keys.config.ts';
import { apiKeyMatchesDigest, parseApiKey, storedDigestOf } from './key-format.ts';
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
  scopes: readonly string[];
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

/**
 * A key's row as read, with what its uses derive from it (its owner once read, the stored hash's
 * bytes, its scopes and roles), kept while nothing is committed: a kept use computes none of them again.
 */
interface KeyRead {
  readonly row: store.ApiKeyRow;
  owner?: User | null;
  /** The stored hash's bytes; null when the stored hash is malformed (nothing matches it). */
  digest?: Uint8Array | null;
  scopes?: readonly string[];
  roles?: readonly string[];
}

/**
 * A key's uses as Gatehouse's resolver, the introspection endpoint and a refusal make them: every
 * member asynchronous, so the registry holds a stand-in that imports this file at the first use
 * (lib/deferred-service.ts; api-keys.module.ts).
 */
export type ApiKeyUse = ReturnType<typeof createApiKeyUse>;

/**
 * The uses that answer at once, without a promise, when they need no I/O (a kept key, a rate-limit
 * lease with points left, scopes read earlier in the request): the hot path of every request made
 * with a key (api-key-guard.ts), reached through `ApiKeyUse.syncFirst`.
 */
export interface SyncFirstKeyUse {
  /**
   * The key a token presented `via` is, with what it may do now; null when it grants nothing
   * (counted; audited when the key is known). A key kept since the last commit is judged at once.
   */
  find(token: string, via: ApiKeyVia): ResolvedKey | null | Promise<ResolvedKey | null>;
  /** Counts one request against the key's limit: the seconds to wait when over it, else null (at once while a lease lasts). */
  consume(key: { id: string; userId: string }): Wait | Promise<Wait>;
  /** The scopes of a key resolved earlier in this request (read again if this instance forgot them). */
  scopesOf(keyId: string): readonly string[] | Promise<readonly string[]>;
  /** A use that passed every check: counted as accepted, and written as the key's last use at most once a minute per key and instance. */
  accept(keyId: string, ip: string | null, via: ApiKeyVia): Promise<void> | undefined;
}

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
  const ownScopes = new Map<string, readonly string[]>();
  /** SQLite: keys' rows and owners as read, while the change counter stays where it was. */
  const counter = changeCounterOf(db);
  const hasChanged = counter === undefined ? undefined : watchChanges(counter);
  const keptReads = new Map<string, KeyRead>();
  /** Moves each time the kept reads are dropped: a read begun before a drop is not kept. */
  let epoch = 0;

  /** The key's row (and owner, once read) kept since no commit; undefined when it must be read. */
  function keptRead(id: string): KeyRead | undefined {
    if (hasChanged?.() === true) {
      epoch++;
      keptReads.clear();
    }
    return keptReads.get(id);
  }

  /** The key's row read now (kept on SQLite, unless the kept reads were dropped while it was read). */
  async function readKey(id: string): Promise<KeyRead | undefined> {
    const startedIn = epoch;
    const row = await store.findKey(db, id);
    if (row === undefined) return undefined;
    const read: KeyRead = { row };
    // Kept only on SQLite, and only if nothing was dropped while it was read (the next use reads the counter again anyway).
    if (hasChanged !== undefined && startedIn === epoch) remember(keptReads, id, read);
    return read;
  }

  async function ownerOf(read: KeyRead): Promise<User | null> {
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

  /** Counts and records a failed use (`failed`), then grants nothing. */
  const refuse = (row: store.ApiKeyRow, reason: UseFailure, via: ApiKeyVia): Promise<null> => failed(row, reason, null, via).then(() => null);

  /**
   * The key a token presented `via` is, with what it may do now; null when it grants nothing
   * (counted; audited when the key is known). With API keys off nothing is a key, and nothing counts.
   * A key kept since the last commit (its row and owner) is judged at once, without a promise.
   */
  function find(token: string, via: ApiKeyVia): ResolvedKey | null | Promise<ResolvedKey | null> {
    if (!config.enabled) return null;
    const parsed = parseApiKey(token);
    if (parsed === null) return count(via, 'unknown'), null;
    const kept = keptRead(parsed.id);
    if (kept !== undefined) return judge(token, parsed.kind, kept, via);
    return readKey(parsed.id).then((read) => (read === undefined ? (count(via, 'unknown'), null) : judge(token, parsed.kind, read, via)));
  }

  function judge(token: string, kind: store.ApiKeyRow['kind'], read: KeyRead, via: ApiKeyVia): ResolvedKey | null | Promise<ResolvedKey | null> {
    const { row } = read;
    if (row.kind !== kind) return count(via, 'unknown'), null;
    remember(ownLimits, row.id, row.rate_limit);
    if (read.digest === undefined) read.digest = storedDigestOf(row.secret_hash);
    if (!apiKeyMatchesDigest(token, read.digest)) return refuse(row, 'UNKNOWN_SECRET', via);
    if (row.revoked_at !== null) return refuse(row, 'REVOKED', via);
    if (Number(row.expires_at) <= clock()) return refuse(row, 'EXPIRED', via);
    const scopes = (read.scopes ??= Object.freeze(parseList(row.scopes)));
    remember(ownScopes, row.id, scopes);
    const chosen = (read.roles ??= Object.freeze(parseList(row.roles)));
    if (row.kind === 'organization') return { row, roles: chosen.slice(0, 1), scopes };
    return thenNow(read.owner !== undefined ? read.owner : ownerOf(read), (owner) => {
      if (owner === null || owner.disabledAt !== null) return refuse(row, 'OWNER_DISABLED', via);
      // What the owner holds now, of what the key was given; ADMIN only through the admin scope.
      const roles = chosen.filter((role) => role !== ADMIN_ROLE && owner.roles.includes(role));
      if (scopes.includes(ADMIN_SCOPE) && owner.roles.includes(ADMIN_ROLE)) roles.push(ADMIN_ROLE);
      return { row, roles, scopes };
    });
  }

  /** Writes the key's last use (and address, when known) at most once a minute per key on this instance; nothing to wait for otherwise. */
  function recordUse(keyId: string, ip: string | null): Promise<void> | undefined {
    const now = clock();
    if (now - (lastWritten.get(keyId) ?? Number.NEGATIVE_INFINITY) < RECORD_USE_EVERY_MS) return undefined;
    remember(lastWritten, keyId, now);
    return store.recordUse(db, keyId, now, ip).catch((error: unknown) => {
      logger.warn({ err: error, keyId }, 'api keys: could not record a use');
    });
  }

  /** Counts one request of `key` under `rateLimit` (its own, or null for the default); a refusal is recorded as a failed use first. */
  function countAgainst(key: { id: string; userId: string }, rateLimit: string | null): Wait | Promise<Wait> {
    return thenNow(limiterFor(rateLimit).consume(key.id), (wait) => {
      if (wait === null) return null;
      return failed({ id: key.id, user_id: key.userId, kind: 'personal', organization_id: null }, 'RATE_LIMITED').then(() => wait);
    });
  }

  /** Counts one request against the key's limit: the seconds to wait when over it, else null (at once while a lease lasts). */
  function consume(key: { id: string; userId: string }): Wait | Promise<Wait> {
    if (ownLimits.has(key.id)) return countAgainst(key, ownLimits.get(key.id)!);
    return store.findKey(db, key.id).then((row) => countAgainst(key, row?.rate_limit ?? null));
  }

  /** The scopes of a key resolved earlier in this request (read again if this instance forgot them). */
  function scopesOf(keyId: string): readonly string[] | Promise<readonly string[]> {
    return ownScopes.get(keyId) ?? store.findKey(db, keyId).then((row) => parseList(row?.scopes ?? '[]'));
  }

  /** A use that passed every check: counted as accepted, and written as the key's last use (see `recordUse`). */
  function accept(keyId: string, ip: string | null, via: ApiKeyVia): Promise<void> | undefined {
    count(via, 'accepted');
    return recordUse(keyId, ip);
  }

  const syncFirst: SyncFirstKeyUse = { find, consume, scopesOf, accept };

  return {
    failed,

    /**
     * Gatehouse's resolver: a personal key's caller (its owner, narrowed; `amr: ['api_key']` and an
     * `authTime` of 0, so no route asking for a recent sign-in or second factor accepts it). An
     * organization key speaks for no person: Gatehouse's own API, which acts for people, refuses it.
     */
    async resolve(token: string): Promise<AuthContext | null> {
      return thenNow(find(token, 'api'), (found) => {
        if (found === null) return null;
        if (found.row.kind !== 'personal' || found.row.user_id === null) return failed(found.row, 'ORGANIZATION_KEY').then(() => null);
        return { userId: found.row.user_id, sessionId: `${KEY_SESSION_PREFIX}${found.row.id}`, roles: found.roles, amr: [API_KEY_AMR], authTime: 0, accessTokenExpiresAt: Number(found.row.expires_at) };
      });
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
      await accept(row.id, null, 'introspection');
      if (organization === null) return { ...base, kind: 'personal', sub: row.user_id! };
      return { ...base, kind: 'organization', org: { id: organization.id, slug: organization.slug, roles } };
    },

    /**
     * The uses that answer at once when they need no I/O (`SyncFirstKeyUse`), for the guard of every
     * request made with a key: asked once, then kept by the caller, so its calls go through no
     * deferred stand-in (whose methods always answer with a promise).
     */
    async syncFirst(): Promise<SyncFirstKeyUse> {
      return syncFirst;
    },
  };
}
