/** Queries on remembered consents (see the migration for what a row means). */
import type { Db } from '../storage/database.ts';

export interface OidcConsentsTable {
  user_id: string;
  client_id: string;
  scopes: string;
  resources: string;
  created_at: number;
  updated_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    oidc_consents: OidcConsentsTable;
  }
}

export interface Consent {
  clientId: string;
  scopes: Set<string>;
  /** Scopes allowed per API. */
  resources: Record<string, string[]>;
}

function toConsent(row: OidcConsentsTable): Consent {
  return { clientId: row.client_id, scopes: new Set(row.scopes.split(' ').filter((scope) => scope !== '')), resources: JSON.parse(row.resources) as Record<string, string[]> };
}

export async function findConsent(db: Db, userId: string, clientId: string): Promise<Consent | undefined> {
  const row = await db.selectFrom('oidc_consents').selectAll().where('user_id', '=', userId).where('client_id', '=', clientId).executeTakeFirst();
  return row === undefined ? undefined : toConsent(row);
}

/** The user's remembered consents, each with when it was first given (epoch ms). */
export async function listConsents(db: Db, userId: string): Promise<Array<Consent & { createdAt: number }>> {
  const rows = await db.selectFrom('oidc_consents').selectAll().where('user_id', '=', userId).orderBy('client_id').execute();
  return rows.map((row) => ({ ...toConsent(row), createdAt: Number(row.created_at) }));
}

/** Adds to what the user allowed the client (never removes: a narrower request asks for less, it takes nothing back). */
export async function rememberConsent(db: Db, userId: string, consent: Consent, now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const existing = await findConsent(trx, userId, consent.clientId);
    const scopes = new Set([...(existing?.scopes ?? []), ...consent.scopes]);
    const resources: Record<string, string[]> = { ...existing?.resources };
    for (const [indicator, allowed] of Object.entries(consent.resources)) resources[indicator] = [...new Set([...(resources[indicator] ?? []), ...allowed])];
    const values = { scopes: [...scopes].join(' '), resources: JSON.stringify(resources), updated_at: now };
    await trx
      .insertInto('oidc_consents')
      .values({ user_id: userId, client_id: consent.clientId, created_at: now, ...values })
      .onConflict((conflict) => conflict.columns(['user_id', 'client_id']).doUpdateSet(values))
      .execute();
  });
}

export async function forgetConsent(db: Db, userId: string, clientId: string): Promise<boolean> {
  const result = await db.deleteFrom('oidc_consents').where('user_id', '=', userId).where('client_id', '=', clientId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function forgetAllConsents(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('oidc_consents').where('user_id', '=', userId).execute();
}
