/**
 * Queries on organizations, their members, invitations and each session's active organization.
 * Functions take `db` so callers can pass a transaction. Only this module's service uses them.
 */
import { sql, type Expression, type Selectable, type SqlBool } from 'kysely';
import type { Db } from '../storage/database.ts';
import { preparedQuery } from '../storage/prepared.ts';
import { containsPattern, escapeLike, type SearchText } from '../lib/search-text.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import type { UserCondition } from '../users/user.store.ts';
import { defineTokenClaims } from '../sessions/session-claims.ts';
import type { OrganizationClaim } from './organizations.model.ts';

export interface OrganizationsTable {
  id: string;
  /** Lower-case, unique (the index decides between concurrent creations). */
  slug: string;
  name: string;
  created_at: number;
  updated_at: number;
}

export interface OrganizationMembersTable {
  organization_id: string;
  user_id: string;
  /** One role per member: OWNER, ADMIN, MEMBER or a custom UPPER_SNAKE role. */
  role: string;
  created_at: number;
  updated_at: number;
}

export interface OrganizationInvitationsTable {
  id: string;
  organization_id: string;
  /** The invited address, normalised. */
  email: string;
  role: string;
  /** SHA-256 (base64url) of the link's token; the token itself is only ever in the mail. */
  token_hash: string;
  /** Who invited; null once that account is deleted (or made by the CLI / an administrator). */
  invited_by: string | null;
  created_at: number;
  expires_at: number;
}

export interface OrganizationSessionsTable {
  session_id: string;
  organization_id: string;
  updated_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    organizations: OrganizationsTable;
    organization_members: OrganizationMembersTable;
    organization_invitations: OrganizationInvitationsTable;
    organization_sessions: OrganizationSessionsTable;
  }
}

export type OrganizationRow = Selectable<OrganizationsTable>;
export type MemberRow = Selectable<OrganizationMembersTable>;
export type InvitationRow = Selectable<OrganizationInvitationsTable>;

/** A membership with its organization. */
export interface MembershipRow extends OrganizationRow {
  role: string;
  joined_at: number;
}

/** A member with the user's name and address. */
export interface MemberWithUserRow extends MemberRow {
  email: string;
  name: string;
}

export async function insertOrganization(db: Db, row: OrganizationRow): Promise<void> {
  await db.insertInto('organizations').values(row).execute();
}

export async function findOrganization(db: Db, id: string): Promise<OrganizationRow | undefined> {
  return db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findOrganizationBySlug(db: Db, slug: string): Promise<OrganizationRow | undefined> {
  return db.selectFrom('organizations').selectAll().where('slug', '=', slug).executeTakeFirst();
}

/**
 * The organization's row, locked until the end of the transaction on PostgreSQL (`FOR UPDATE`), so
 * that two changes to its members (two OWNERs demoting each other) run one after the other and the
 * second sees the first's result. SQLite runs one writing transaction at a time anyway.
 */
export async function lockOrganization(db: Db, id: string, isPostgres: boolean): Promise<OrganizationRow | undefined> {
  let query = db.selectFrom('organizations').selectAll().where('id', '=', id);
  if (isPostgres) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function updateOrganization(db: Db, id: string, changes: Partial<Pick<OrganizationRow, 'name' | 'slug'>>, now: number): Promise<boolean> {
  const result = await db.updateTable('organizations').set({ ...changes, updated_at: now }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteOrganization(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('organizations').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Organizations newest first (the `(created_at)` index), with their member counts; with a search
 * (the admin lists' syntax, lib/search-text.ts, the text lower-cased), those whose slug or
 * lower-cased name matches it:
 * - `prefix` (the default): a word of the slug or of the name starts with the text. On PostgreSQL the
 *   slug's start is a B-tree walk (`organizations_slug_prefix_idx`), a later word's start the
 *   trigram indexes (migration 20261204-organizations-search);
 * - `contains`: the slug or the name holds the text anywhere (the trigram indexes);
 * - `exact`: the slug, or the whole name, is the text.
 * Without pg_trgm the name's conditions read the table in order; SQLite does so at the sizes it serves.
 * With `before`, strictly after that position in the order (keyset pages: lib/keyset-cursor.ts).
 */
export async function listOrganizations(db: Db, filter: { search?: SearchText; before?: KeysetPosition; limit: number }): Promise<Array<OrganizationRow & { member_count: number }>> {
  let query = db
    .selectFrom('organizations')
    .selectAll('organizations')
    .select((eb) => eb.selectFrom('organization_members').select(eb.fn.countAll<number>().as('n')).whereRef('organization_members.organization_id', '=', 'organizations.id').as('member_count'));
  const search = filter.search;
  if (search !== undefined) query = query.where(organizationMatches({ ...search, text: search.text.toLowerCase() }));
  const before = filter.before;
  if (before !== undefined) {
    query = query.where((eb) => eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]));
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
  return rows.map((row) => ({ ...row, member_count: Number(row.member_count) }));
}

function organizationMatches(search: SearchText): Expression<SqlBool> {
  const slug = sql.ref('slug');
  const name = sql`lower(${sql.ref('name')})`;
  // `escape`: SQLite has no default escape character, so escapeLike's backslashes must be named one.
  const like = (column: Expression<unknown>, pattern: string) => sql<SqlBool>`${column} like ${pattern} escape '\\'`;
  switch (search.match) {
    case 'prefix': {
      // A word's start: after a space in the name, after a hyphen in the slug (which splits the
      // name's words at any punctuation: "Hewlett-Packard" is `hewlett-packard`).
      const start = `${escapeLike(search.text)}%`;
      return sql<SqlBool>`(${like(slug, start)} or ${like(slug, `%-${start}`)} or ${like(name, start)} or ${like(name, `% ${start}`)})`;
    }
    case 'contains':
      return sql<SqlBool>`(${like(slug, containsPattern(search.text))} or ${like(name, containsPattern(search.text))})`;
    case 'exact':
      // The name as a LIKE without wildcards: every pg_trgm version serves that (`=` only from 1.6).
      return sql<SqlBool>`(${slug} = ${search.text} or ${like(name, escapeLike(search.text))})`;
  }
}

/** The condition "the user is a member of `organizationId`" on a users query (the administrators' filter): a lookup on the primary key. */
export function isMemberOf(organizationId: string): UserCondition {
  return (eb) =>
    eb.exists(
      eb.selectFrom('organization_members').select('organization_members.user_id').where('organization_members.organization_id', '=', organizationId).whereRef('organization_members.user_id', '=', 'users.id'),
    );
}

export async function insertMember(db: Db, row: MemberRow): Promise<void> {
  await db.insertInto('organization_members').values(row).execute();
}

export async function findMember(db: Db, organizationId: string, userId: string): Promise<MemberRow | undefined> {
  return db.selectFrom('organization_members').selectAll().where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst();
}

export async function setMemberRole(db: Db, organizationId: string, userId: string, role: string, now: number): Promise<boolean> {
  const result = await db.updateTable('organization_members').set({ role, updated_at: now }).where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteMember(db: Db, organizationId: string, userId: string): Promise<boolean> {
  const result = await db.deleteFrom('organization_members').where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function countMembers(db: Db, organizationId: string): Promise<{ members: number; owners: number }> {
  const row = await db
    .selectFrom('organization_members')
    .select((eb) => [eb.fn.countAll<number>().as('members'), eb.fn.sum<number>(eb.case().when('role', '=', 'OWNER').then(1).else(0).end()).as('owners')])
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return { members: Number(row.members), owners: Number(row.owners ?? 0) };
}

/** The organization's members with their names and addresses, by when they joined. */
export async function listMembers(db: Db, organizationId: string): Promise<MemberWithUserRow[]> {
  return db
    .selectFrom('organization_members')
    .innerJoin('users', 'users.id', 'organization_members.user_id')
    .selectAll('organization_members')
    .select(['users.email', 'users.name'])
    .where('organization_members.organization_id', '=', organizationId)
    .orderBy('organization_members.created_at', 'asc')
    .orderBy('organization_members.user_id', 'asc')
    .execute();
}

/** The user's organizations with their role, by name. */
export async function listMemberships(db: Db, userId: string): Promise<MembershipRow[]> {
  return db
    .selectFrom('organization_members')
    .innerJoin('organizations', 'organizations.id', 'organization_members.organization_id')
    .selectAll('organizations')
    .select(['organization_members.role', 'organization_members.created_at as joined_at'])
    .where('organization_members.user_id', '=', userId)
    .orderBy('organizations.name', 'asc')
    .orderBy('organizations.id', 'asc')
    .execute();
}

export async function countOwned(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('organization_members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .where('role', '=', 'OWNER')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Whether a user with this (normalised) address is a member. */
export async function isMemberByEmail(db: Db, organizationId: string, email: string): Promise<boolean> {
  const row = await db
    .selectFrom('organization_members')
    .innerJoin('users', 'users.id', 'organization_members.user_id')
    .select('organization_members.user_id')
    .where('organization_members.organization_id', '=', organizationId)
    .where('users.email', '=', email)
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertInvitation(db: Db, row: InvitationRow): Promise<void> {
  await db.insertInto('organization_invitations').values(row).execute();
}

/** Ends the pending invitations of this address to this organization (a new one replaces them). */
export async function deleteInvitationsTo(db: Db, organizationId: string, email: string): Promise<string[]> {
  const rows = await db.deleteFrom('organization_invitations').where('organization_id', '=', organizationId).where('email', '=', email).returning('id').execute();
  return rows.map((row) => row.id);
}

/**
 * Deletes the pending invitations to the address of this user (an account being deleted: its
 * address is erased everywhere), with their organization's slug for the events.
 */
export async function deleteInvitationsToAddressOf(db: Db, userId: string): Promise<Array<{ id: string; organization_id: string; slug: string; role: string }>> {
  const rows = await db
    .selectFrom('organization_invitations')
    .innerJoin('organizations', 'organizations.id', 'organization_invitations.organization_id')
    .select(['organization_invitations.id', 'organization_invitations.organization_id', 'organizations.slug', 'organization_invitations.role'])
    .where('organization_invitations.email', '=', (eb) => eb.selectFrom('users').select('users.email').where('users.id', '=', userId))
    .orderBy('organization_invitations.id')
    .execute();
  if (rows.length > 0) await db.deleteFrom('organization_invitations').where('id', 'in', rows.map((row) => row.id)).execute();
  return rows;
}

export async function findInvitation(db: Db, id: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('organization_invitations').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findInvitationByHash(db: Db, tokenHash: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('organization_invitations').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Deletes it; false when another request used, declined or revoked it first (so only one wins). */
export async function deleteInvitation(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('organization_invitations').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The organization's live invitations, newest first. */
export async function listInvitations(db: Db, organizationId: string, now: number): Promise<InvitationRow[]> {
  return db
    .selectFrom('organization_invitations')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** Live invitations to this address, with their organization, newest first. */
export async function listInvitationsTo(db: Db, email: string, now: number): Promise<Array<InvitationRow & { organization_name: string; organization_slug: string }>> {
  return db
    .selectFrom('organization_invitations')
    .innerJoin('organizations', 'organizations.id', 'organization_invitations.organization_id')
    .selectAll('organization_invitations')
    .select(['organizations.name as organization_name', 'organizations.slug as organization_slug'])
    .where('organization_invitations.email', '=', email)
    .where('organization_invitations.expires_at', '>', now)
    .orderBy('organization_invitations.created_at', 'desc')
    .execute();
}

/** Deletes expired invitations, at most `limit` per call. */
export async function deleteExpiredInvitations(db: Db, now: number, limit: number): Promise<number> {
  const ids = db.selectFrom('organization_invitations').select('id').where('expires_at', '<=', now).limit(limit);
  const result = await db.deleteFrom('organization_invitations').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The session's active organization, when its user is (still) a member: the `org` claim. */
// Compiled once: it runs with every session check of the database strategy (the session endpoint's claims).
/**
 * The `org` token claim, read with the session (sessions/session-claims.ts): the session's active
 * organization while its user is a member of it (a removed member's claim is gone from the next
 * token, and from the database strategy's next check).
 */
export const activeOrganizationClaim = defineTokenClaims({
  select: (session) =>
    session
      .selectFrom('organization_sessions')
      .innerJoin('organizations', 'organizations.id', 'organization_sessions.organization_id')
      .innerJoin('organization_members', (join) =>
        join.onRef('organization_members.organization_id', '=', 'organization_sessions.organization_id').onRef('organization_members.user_id', '=', 'sessions.user_id'),
      )
      .select(['organizations.id', 'organizations.slug', 'organization_members.role'])
      .whereRef('organization_sessions.session_id', '=', 'sessions.id'),
  claims: (row): { org?: OrganizationClaim } => (row === null ? {} : { org: { id: row.id, slug: row.slug, roles: [row.role] } }),
});

/** The session's active organization id, member or not. */
export async function findActiveOrganizationId(db: Db, sessionId: string): Promise<string | undefined> {
  return (await db.selectFrom('organization_sessions').select('organization_id').where('session_id', '=', sessionId).executeTakeFirst())?.organization_id;
}

export async function setActiveOrganization(db: Db, sessionId: string, organizationId: string, now: number): Promise<void> {
  await db
    .insertInto('organization_sessions')
    .values({ session_id: sessionId, organization_id: organizationId, updated_at: now })
    .onConflict((oc) => oc.column('session_id').doUpdateSet({ organization_id: organizationId, updated_at: now }))
    .execute();
}

export async function clearActiveOrganization(db: Db, sessionId: string): Promise<void> {
  await db.deleteFrom('organization_sessions').where('session_id', '=', sessionId).execute();
}

/** Ends a former member's sessions' choice of this organization. */
export async function clearActiveFor(db: Db, organizationId: string, userId: string): Promise<void> {
  const sessions = db.selectFrom('sessions').select('id').where('user_id', '=', userId);
  await db.deleteFrom('organization_sessions').where('organization_id', '=', organizationId).where('session_id', 'in', sessions).execute();
}
