/**
 * Sessions and tokens: signing keys (published at the JWKS), the revocation list (mirrored in
 * memory by the jwt strategy), the session service, the session and sign-out endpoints, and the
 * sessions' approximate places for the pages (from GEOIP_DATABASE_FILE, when the operator sets one).
 */
import { collectAuditEventTypes, defineModule, type RouteContext } from '../module.ts';
import { createSessionChanges, createSqliteSessionChanges, type SessionChanges } from './session-change-bus.ts';
import { changeCounterOf, type Db } from '../storage/database.ts';
import type { Config } from '../config.ts';
import { cli } from './keys.cli.ts';
import { SESSIONS_ERRORS } from './sessions.errors.ts';
import { sessionsConfigSection } from './sessions.config.ts';
import * as sessionHousekeeping from './migrations/0008-session-housekeeping.ts';
import * as sessionAuthentication from './migrations/20261124-sessions-authentication.ts';
import { loadSigningKeys, type SigningKeys } from './signing-keys.ts';
import { createRevocationList, type RevocationList } from './revocation-list.ts';
import { createSessionService, type SessionService } from './session.service.ts';
import { jwksRoutes } from './jwks.routes.ts';
import { sessionRoutes, signOutRoutes } from './session.routes.ts';
import { SESSIONS_MESSAGES } from './session-texts.ts';
import { createPlaceFinder, type PlaceFinder } from './place.ts';
import { accessTokenResolver } from './request-authentication.ts';
import { SESSIONS_PUBLIC_EVENTS } from './sessions.public-events.ts';
import { SESSIONS_COUNTED_EVENTS, SESSIONS_COUNTERS } from './sessions.metrics.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    keys: SigningKeys;
    revocations: RevocationList;
    sessions: SessionService;
    /** Where a session's address is, roughly ("Berlin, Germany"), for the pages that list sessions. */
    places: PlaceFinder;
    /** SESSION_CHECK_CACHE on: the kept check reads and how instances tell each other of changes; else undefined. */
    sessionChanges: SessionChanges | undefined;
  }
}

const sessionRouteOptions = ({ services, csrf, config, clock }: RouteContext) => ({
  sessions: services.sessions,
  csrf,
  config,
  clock,
  limits: services.limits,
});

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['signout', 'session.ended', 'refresh.reuse_detected', 'user.sessions_ended'] as const;
type SessionsAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends SessionsAuditEvents {}
}

/**
 * SESSION_CHECK_CACHE: on PostgreSQL, database strategy only, the cache with its announcements; on
 * a SQLite file, either strategy, the cache kept by storage's change counter (the jwt strategy uses
 * it for the current roles of admin routes); else (off, jwt on PostgreSQL, in-memory SQLite) none.
 */
function checkCacheOf(config: Config, db: Db, postgres: () => SessionChanges): SessionChanges | undefined {
  if (config.sessions.checkCacheSize <= 0) return undefined;
  if (config.database.kind === 'postgres') return config.sessionStrategy === 'database' ? postgres() : undefined;
  const counter = changeCounterOf(db);
  return counter === undefined ? undefined : createSqliteSessionChanges(config.sessions.checkCacheSize, counter);
}

export const sessionsModule = defineModule({
  name: 'sessions',
  cli,
  openApiTags: [
    { name: 'sessions', description: "The current session, the signed-in user's sessions, refresh tokens, sign-out and the CSRF token." },
    { name: 'keys', description: "The public keys that verify Gatehouse's tokens (JWKS)." },
  ],
  config: sessionsConfigSection,
  migrations: { '0008-session-housekeeping': sessionHousekeeping, '20261124-sessions-authentication': sessionAuthentication },
  errors: SESSIONS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: SESSIONS_PUBLIC_EVENTS,
  counters: SESSIONS_COUNTERS,
  countedEvents: SESSIONS_COUNTED_EVENTS,
  // How the pages (dashboard, admin) name a session's device and place, in every language.
  messages: SESSIONS_MESSAGES,
  async provide({ db, storage, config, clock, services, tokenClaims, logger, modules }) {
    const keys = await loadSigningKeys({ db, authSecret: config.authSecret, clock, retentionMs: config.tokens.accessTokenTtlSeconds * 1000 });
    const revocations = createRevocationList({
      db,
      clock,
      syncIntervalMs: config.sessions.revocationSyncIntervalMs,
      // Fail closed when this instance has not heard from storage for a while.
      staleAfterMs: Math.max(30_000, 10 * config.sessions.revocationSyncIntervalMs),
    });
    const sessionChanges = checkCacheOf(config, db, () => createSessionChanges({ url: (config.database as { url: string }).url, size: config.sessions.checkCacheSize, logger, eventTypes: collectAuditEventTypes(modules) }));
    const sessions = createSessionService({
      db,
      isPostgres: storage.dialect === 'postgres',
      keys,
      users: services.users,
      revocations,
      audit: services.audit,
      clock,
      strategy: config.sessionStrategy,
      authSecret: config.authSecret,
      tokens: config.tokens,
      sessions: config.sessions,
      claims: tokenClaims,
      ...(sessionChanges && { checkCache: sessionChanges }),
    });
    // Nothing is read here: the database is loaded by the first page that lists sessions (place.ts says why).
    const places = createPlaceFinder({ file: config.sessions.geoipDatabaseFile, logger });
    return { keys, revocations, sessions, places, sessionChanges };
  },
  jobs: ({ keys, revocations, sessionChanges }, { config }) => [
    // SESSION_CHECK_CACHE: the connection that hears other instances' changes.
    ...(sessionChanges?.listener === undefined ? [] : [sessionChanges.listener]),
    // The keys are pulled again now and then, so every instance sees a rotation.
    keys,
    // Only the jwt strategy reads the mirror; the database strategy reads session rows instead.
    ...(config.sessionStrategy === 'jwt' ? [revocations] : []),
  ],
  // SESSION_CHECK_CACHE: every domain event about a user (or an organization) tells every instance to read again.
  subscriptions: ({ sessionChanges }) => (sessionChanges?.subscription === undefined ? [] : [sessionChanges.subscription]),
  // A Bearer token shaped as an access token is checked by the session strategy.
  credentialResolvers: ({ sessions }) => [accessTokenResolver(sessions)],
  // A deleted user's sessions end (their tokens refused at once, in both strategies); the list of them is theirs to export.
  userData: ({ sessions }) => ({
    erase: async ({ user, db, source }) => void (await sessions.endAllSessions(user.id, { source, reason: 'ACCOUNT_DELETED', db })),
    export: async (userId) => ({ sessions: await sessions.listSessions(userId) }),
  }),
  routes: [
    { scope: 'api', register: (app, { services }) => app.register(jwksRoutes, { keys: services.keys }) },
    { scope: 'api', register: (app, context) => app.register(sessionRoutes, sessionRouteOptions(context)) },
    { scope: 'browser', register: (app, context) => app.register(signOutRoutes, sessionRouteOptions(context)) },
  ],
});
