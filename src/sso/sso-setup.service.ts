/**
 * Setup links: an organization's OWNER (or an operator) makes a link to send to their IT admin,
 * who sets up the organization's single sign-on with it, without a Gatehouse account: our SP
 * values, the IdP's metadata (or the OIDC client), a test sign-in, the domain's verification and
 * the SCIM token (sso-setup-pages.routes.ts). The link is the credential, so it is treated as a
 * bearer secret: 256 random bits, only its SHA-256 stored, one organization and one connection,
 * short-lived (SETUP_LINK_DEFAULT_DAYS, at most SETUP_LINK_MAX_DAYS), revocable, audited
 * (`sso.setup_link_created|revoked|opened`), never logged (the page takes it as `?token=`, which
 * the request log masks, and keeps it in an HttpOnly cookie from then on).
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import { OWNER, isOperator, type Actor, type OrganizationsService } from '../organizations/organizations.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import type { SsoConnections } from './sso-connections.ts';
import type { SetupTestOutcome } from './sso.service.ts';
import { REQUEST_TTL_MS } from './saml-sp.ts';
import { SETUP_PAGE } from './sso-setup.paths.ts';
import * as store from './sso-setup.store.ts';
import { SETUP_LINK_DEFAULT_DAYS, SETUP_LINK_MAX_DAYS } from './sso-setup.rules.ts';

// Declared apart, for the routes and pages that offer the choice (sso-setup.rules.ts).
export { SETUP_LINK_DEFAULT_DAYS, SETUP_LINK_MAX_DAYS } from './sso-setup.rules.ts';
const DAY_MS = 86_400_000;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** A link's last use is written at most this often. */
const LAST_USED_RESOLUTION_MS = 60_000;

export type SetupLinkStatus = 'active' | 'expired' | 'revoked';

export interface SetupLink {
  id: string;
  organizationId: string;
  /** The connection the link sets up: an existing one, or the id reserved for the one it will create. */
  connectionId: string;
  createdBy: string | null;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
  status: SetupLinkStatus;
}

export type LinkRefusal = 'ORGANIZATION_NOT_FOUND' | 'ORGANIZATION_ROLE_REQUIRED';
export type OpenRefusal = 'SSO_SETUP_LINK_INVALID' | 'SSO_SETUP_LINK_EXPIRED' | 'SSO_SETUP_LINK_REVOKED';

export function createSsoSetup(deps: { db: Db; clock: Clock; audit: AuditService; organizations: OrganizationsService; connections: SsoConnections; authUrl: string }) {
  const { db, clock, audit, organizations, connections } = deps;

  const toLink = (row: store.SetupLinkRow, now = clock()): SetupLink => ({
    id: row.id,
    organizationId: row.organization_id,
    connectionId: row.connection_id,
    createdBy: row.created_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
    status: row.revoked_at !== null ? 'revoked' : row.expires_at <= now ? 'expired' : 'active',
  });

  /** Null when `actor` may hand out the organization's setup links (an operator, or its OWNER: the link gives away what an owner decides). */
  async function refusalFor(organizationId: string, actor: Actor): Promise<LinkRefusal | null> {
    const found = await organizations.get(organizationId, actor);
    if (found === null) return 'ORGANIZATION_NOT_FOUND';
    return isOperator(actor) || found.role === OWNER ? null : 'ORGANIZATION_ROLE_REQUIRED';
  }

  const linkUrl = (token: string) => `${deps.authUrl}${SETUP_PAGE}?${new URLSearchParams({ token })}`;
  const details = (row: store.SetupLinkRow) => ({ linkId: row.id, organizationId: row.organization_id, connectionId: row.connection_id });

  return {
    /** A new link (its URL is in this answer only). `connectionId`: one of the organization's connections to change; else a new one. */
    async create(
      organizationId: string,
      input: { expiresInDays?: number | undefined; connectionId?: string | undefined },
      actor: Actor,
      source: AuditSource,
    ): Promise<{ ok: true; link: SetupLink; url: string } | { ok: false; reason: LinkRefusal | 'SSO_CONNECTION_NOT_FOUND' }> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      let connectionId = randomId();
      if (input.connectionId !== undefined) {
        const connection = await connections.get(input.connectionId);
        if (connection === null || connection.organizationId !== organizationId) return { ok: false, reason: 'SSO_CONNECTION_NOT_FOUND' };
        connectionId = connection.id;
      }
      const days = Math.min(Math.max(input.expiresInDays ?? SETUP_LINK_DEFAULT_DAYS, 1), SETUP_LINK_MAX_DAYS);
      const token = randomSecret(32);
      const now = clock();
      const row: store.SetupLinkRow = {
        id: randomId(),
        organization_id: organizationId,
        connection_id: connectionId,
        token_hash: sha256Base64url(token),
        created_by: isOperator(actor) ? null : actor.userId,
        created_at: now,
        expires_at: now + days * DAY_MS,
        revoked_at: null,
        last_used_at: null,
      };
      await db.transaction().execute(async (trx) => {
        await store.insertLink(trx, row);
        await audit.record({ type: 'sso.setup_link_created', source, details: { ...details(row), expiresAt: new Date(row.expires_at).toISOString() } }, { db: trx });
      });
      return { ok: true, link: toLink(row, now), url: linkUrl(token) };
    },

    async list(organizationId: string, actor: Actor): Promise<{ ok: true; links: SetupLink[] } | { ok: false; reason: LinkRefusal }> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      const now = clock();
      return { ok: true, links: (await store.listLinks(db, organizationId)).map((row) => toLink(row, now)) };
    },

    async revoke(organizationId: string, linkId: string, actor: Actor, source: AuditSource): Promise<{ ok: true } | { ok: false; reason: LinkRefusal | 'SSO_SETUP_LINK_NOT_FOUND' }> {
      const refusal = await refusalFor(organizationId, actor);
      if (refusal !== null) return { ok: false, reason: refusal };
      return db.transaction().execute(async (trx) => {
        const row = await store.findLink(trx, organizationId, linkId);
        if (row === undefined || !(await store.revokeLink(trx, organizationId, linkId, clock()))) return { ok: false as const, reason: 'SSO_SETUP_LINK_NOT_FOUND' as const };
        await audit.record({ type: 'sso.setup_link_revoked', source, details: details(row) }, { db: trx });
        return { ok: true as const };
      });
    },

    /**
     * The link a token opens, or why not. A token of the wrong shape is never looked up; one that is
     * not a link's (tampered, made up) is INVALID; a real one past its end, EXPIRED; revoked, REVOKED.
     * `opened` (the first visit through the URL) records `sso.setup_link_opened`.
     */
    async open(token: string | undefined, source: AuditSource, opened = false): Promise<{ ok: true; link: SetupLink } | { ok: false; reason: OpenRefusal }> {
      if (token === undefined || !TOKEN_PATTERN.test(token)) return { ok: false, reason: 'SSO_SETUP_LINK_INVALID' };
      const row = await store.findLinkByHash(db, sha256Base64url(token));
      if (row === undefined) return { ok: false, reason: 'SSO_SETUP_LINK_INVALID' };
      const now = clock();
      const link = toLink(row, now);
      if (link.status === 'revoked') return { ok: false, reason: 'SSO_SETUP_LINK_REVOKED' };
      if (link.status === 'expired') return { ok: false, reason: 'SSO_SETUP_LINK_EXPIRED' };
      // The organization went away (its links with it, by the foreign key): nothing to set up.
      if ((await organizations.get(link.organizationId, OPERATOR)) === null) return { ok: false, reason: 'SSO_SETUP_LINK_INVALID' };
      if (opened) await audit.record({ type: 'sso.setup_link_opened', source, details: details(row) });
      if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS) await store.touchLink(db, row.id, now);
      return { ok: true, link };
    },

    /** A test sign-in for the link's connection: its id, for `sso.start(…, testId)`. */
    async startTest(link: SetupLink): Promise<string> {
      const id = randomId();
      await store.insertTest(db, { id, link_id: link.id, connection_id: link.connectionId, result: null, expires_at: clock() + REQUEST_TTL_MS });
      return id;
    },

    /** What a test of this link showed: its outcome, `pending` while the IdP has not answered, null when it is not this link's (or has expired). */
    async testResult(link: SetupLink, testId: string): Promise<SetupTestOutcome | 'pending' | null> {
      if (testId.length === 0 || testId.length > 32) return null;
      const row = await store.findTest(db, testId, clock());
      if (row === undefined || row.link_id !== link.id || row.connection_id !== link.connectionId) return null;
      return row.result === null ? 'pending' : (JSON.parse(row.result) as SetupTestOutcome);
    },
  };
}

export type SsoSetup = ReturnType<typeof createSsoSetup>;
