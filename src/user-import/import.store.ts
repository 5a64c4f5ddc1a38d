/**
 * The bulk writes of `gatehouse import` and the reads of `gatehouse export users` and `import
 * hashes`: a batch of users and their roles in one transaction, keyed by the normalised address.
 * Users are written here directly, not one by one through the users service: a million
 * transactions would take hours. The rows are those the service writes (users, user_roles).
 */
import { sql } from 'kysely';
import type { Db } from '../storage/database.ts';
import type { UserRow } from '../storage/schema.ts';
import { randomId } from '../lib/random.ts';
import type { ImportRow } from './import-record.ts';

export async function findIdsByEmail(db: Db, emails: readonly string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map();
  const rows = await db.selectFrom('users').select(['id', 'email']).where('email', 'in', emails).execute();
  return new Map(rows.map((row) => [row.email, row.id]));
}

/**
 * Inserts `created` and replaces what the export says of `updated` (their roles become the
 * export's), with their identities and TOTP secrets (`seal`: the mfa module's box), in one
 * transaction. An identity already linked to an account, or a provider the account already has,
 * is left out; so is a TOTP secret for an account that has one. How many were left out is returned.
 */
export async function writeBatch(
  db: Db,
  created: readonly ImportRow[],
  updated: ReadonlyArray<{ id: string; row: ImportRow }>,
  now: number,
  seal: (secret: string, userId: string) => string,
): Promise<{ identitiesLeftOut: number; totpLeftOut: number; membershipsLeftOut: number }> {
  return db.transaction().execute(async (trx) => {
    const users = created.map((row) => ({ id: randomId(), row }));
    if (created.length > 0) {
      await trx
        .insertInto('users')
        .values(
          users.map(({ id, row }) => {
            const createdAt = row.createdAt ?? now;
            return {
              id,
              email: row.email,
              name: row.name,
              password_hash: row.passwordHash,
              email_verified_at: row.emailVerified ? createdAt : null,
              // The old system had the name from its owner (or an administrator): mails may greet with it once the address is verified.
              name_confirmed_at: row.emailVerified && row.name !== '' ? createdAt : null,
              locale: null,
              disabled_at: row.disabled ? now : null,
              password_locked_at: null,
              created_at: createdAt,
              updated_at: now,
            };
          }),
        )
        .execute();
      const roles = users.flatMap(({ id, row }) => row.roles.map((role) => ({ user_id: id, role, created_at: now })));
      if (roles.length > 0) await trx.insertInto('user_roles').values(roles).execute();
    }
    for (const { id, row } of updated) {
      await trx
        .updateTable('users')
        .set({
          name: row.name,
          password_hash: row.passwordHash,
          email_verified_at: row.emailVerified ? sql<number>`coalesce(email_verified_at, ${now})` : null,
          disabled_at: row.disabled ? sql<number>`coalesce(disabled_at, ${now})` : null,
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
      await trx.deleteFrom('user_roles').where('user_id', '=', id).execute();
      if (row.roles.length > 0) await trx.insertInto('user_roles').values(row.roles.map((role) => ({ user_id: id, role, created_at: now }))).execute();
    }
    return writeFactors(trx, [...users, ...updated], now, seal);
  });
}

async function writeFactors(trx: Db, users: ReadonlyArray<{ id: string; row: ImportRow }>, now: number, seal: (secret: string, userId: string) => string) {
  const identities = users.flatMap(({ id, row }) => row.identities.map((identity) => ({ userId: id, ...identity })));
  let identitiesLeftOut = 0;
  if (identities.length > 0) {
    const taken = await trx
      .selectFrom('oauth_accounts')
      .select(['user_id', 'provider', 'provider_user_id'])
      .where((eb) => eb.or([eb('provider_user_id', 'in', identities.map((identity) => identity.subject)), eb('user_id', 'in', identities.map((identity) => identity.userId))]))
      .execute();
    const subjects = new Set(taken.map((row) => `${row.provider} ${row.provider_user_id}`));
    const linked = new Set(taken.map((row) => `${row.user_id} ${row.provider}`));
    const fresh = identities.filter((identity) => {
      const [subject, link] = [`${identity.provider} ${identity.subject}`, `${identity.userId} ${identity.provider}`];
      if (subjects.has(subject) || linked.has(link)) return false;
      subjects.add(subject);
      linked.add(link);
      return true;
    });
    identitiesLeftOut = identities.length - fresh.length;
    if (fresh.length > 0) {
      await trx
        .insertInto('oauth_accounts')
        .values(fresh.map((identity) => ({ id: randomId(), user_id: identity.userId, provider: identity.provider, provider_user_id: identity.subject, email: null, created_at: now, last_used_at: now })))
        .execute();
    }
  }
  const secrets = users.filter(({ row }) => row.totpSecret !== null);
  let totpLeftOut = 0;
  if (secrets.length > 0) {
    const enrolled = new Set((await trx.selectFrom('mfa_totp').select('user_id').where('user_id', 'in', secrets.map(({ id }) => id)).execute()).map((row) => row.user_id));
    const fresh = secrets.filter(({ id }) => !enrolled.has(id));
    totpLeftOut = secrets.length - fresh.length;
    if (fresh.length > 0) {
      await trx
        .insertInto('mfa_totp')
        .values(fresh.map(({ id, row }) => ({ user_id: id, secret_box: seal(row.totpSecret!, id), enabled_at: now, last_used_step: null, pending_box: null, pending_expires_at: null, updated_at: now })))
        .execute();
    }
  }
  return { identitiesLeftOut, totpLeftOut, membershipsLeftOut: await writeMemberships(trx, users, now) };
}

/** Memberships of organizations that exist, for users not yet members; how many were left out. */
async function writeMemberships(trx: Db, users: ReadonlyArray<{ id: string; row: ImportRow }>, now: number): Promise<number> {
  const wanted = users.flatMap(({ id, row }) => row.organizations.map((membership) => ({ userId: id, ...membership })));
  if (wanted.length === 0) return 0;
  const organizations = new Map((await trx.selectFrom('organizations').select(['id', 'slug']).where('slug', 'in', [...new Set(wanted.map((m) => m.slug))]).execute()).map((row) => [row.slug, row.id]));
  const present = new Set(
    (await trx.selectFrom('organization_members').select(['organization_id', 'user_id']).where('user_id', 'in', [...new Set(wanted.map((m) => m.userId))]).execute()).map((row) => `${row.organization_id} ${row.user_id}`),
  );
  const fresh = wanted.flatMap((membership) => {
    const organizationId = organizations.get(membership.slug);
    return organizationId === undefined || present.has(`${organizationId} ${membership.userId}`) ? [] : [{ organization_id: organizationId, user_id: membership.userId, role: membership.role, created_at: now, updated_at: now }];
  });
  if (fresh.length > 0) await trx.insertInto('organization_members').values(fresh).execute();
  return wanted.length - fresh.length;
}

/** Each user's memberships, by organization slug. */
export async function findMembershipsOf(db: Db, userIds: readonly string[]): Promise<Map<string, Array<{ slug: string; role: string }>>> {
  const rows = await db
    .selectFrom('organization_members')
    .innerJoin('organizations', 'organizations.id', 'organization_members.organization_id')
    .select(['organization_members.user_id', 'organizations.slug', 'organization_members.role'])
    .where('organization_members.user_id', 'in', userIds)
    .orderBy('organizations.slug')
    .execute();
  const byUser = new Map<string, Array<{ slug: string; role: string }>>();
  for (const row of rows) (byUser.get(row.user_id) ?? byUser.set(row.user_id, []).get(row.user_id)!).push({ slug: row.slug, role: row.role });
  return byUser;
}

export type ExportedUser = Pick<UserRow, 'id' | 'email' | 'name' | 'password_hash' | 'email_verified_at' | 'disabled_at' | 'created_at'>;

/** Users in id order, `limit` after `afterId` (keyset: constant memory over any number). */
export async function findUsersAfter(db: Db, afterId: string, limit: number): Promise<Array<ExportedUser & { roles: string[] }>> {
  const users = await db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'password_hash', 'email_verified_at', 'disabled_at', 'created_at'])
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  if (users.length === 0) return [];
  const roles = await db.selectFrom('user_roles').select(['user_id', 'role']).where('user_id', 'in', users.map((user) => user.id)).orderBy('role').execute();
  const byUser = new Map<string, string[]>();
  for (const { user_id, role } of roles) (byUser.get(user_id) ?? byUser.set(user_id, []).get(user_id)!).push(role);
  return users.map((user) => ({ ...user, roles: byUser.get(user.id) ?? [] }));
}

/** How many stored password hashes are of each kind (by prefix), and how many accounts have none. */
export async function countHashKinds(db: Db): Promise<Array<{ kind: string; count: number }>> {
  const kind = sql<string>`case
    when password_hash is null then 'none'
    when password_hash like '$argon2id$%' then 'argon2id'
    when password_hash like '$argon2i$%' then 'argon2i'
    when password_hash like '$argon2d$%' then 'argon2d'
    when password_hash like '$2%' then 'bcrypt'
    when password_hash like '$scrypt$%' then 'scrypt'
    when password_hash like '$firebase-scrypt$%' then 'firebase-scrypt'
    when password_hash like '$pbkdf2-sha1$%' then 'pbkdf2-sha1'
    when password_hash like '$pbkdf2-sha256$%' then 'pbkdf2-sha256'
    when password_hash like '$pbkdf2-sha512$%' then 'pbkdf2-sha512'
    when password_hash like '$sha256$%' then 'sha256'
    when password_hash like '$sha512$%' then 'sha512'
    else 'unknown' end`;
  const rows = await db.selectFrom('users').select([kind.as('kind'), sql<string | number>`count(*)`.as('count')]).groupBy(kind).orderBy('kind').execute();
  return rows.map((row) => ({ kind: row.kind, count: Number(row.count) }));
}

/** The linked identities and enabled TOTP boxes of `userIds`. */
export async function findFactorsOf(db: Db, userIds: readonly string[]): Promise<{ identities: Map<string, Array<{ provider: string; subject: string }>>; totp: Map<string, string> }> {
  const [accounts, totp] = await Promise.all([
    db.selectFrom('oauth_accounts').select(['user_id', 'provider', 'provider_user_id']).where('user_id', 'in', userIds).orderBy('provider').execute(),
    db.selectFrom('mfa_totp').select(['user_id', 'secret_box']).where('user_id', 'in', userIds).where('enabled_at', 'is not', null).execute(),
  ]);
  const identities = new Map<string, Array<{ provider: string; subject: string }>>();
  for (const row of accounts) (identities.get(row.user_id) ?? identities.set(row.user_id, []).get(row.user_id)!).push({ provider: row.provider, subject: row.provider_user_id });
  return { identities, totp: new Map(totp.flatMap((row) => (row.secret_box === null ? [] : [[row.user_id, row.secret_box] as const]))) };
}
