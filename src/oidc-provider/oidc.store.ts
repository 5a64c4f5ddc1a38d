/**
 * Queries on `oidc_payloads`, the one table behind oidc-provider's storage adapter
 * (oidc.adapter.ts). Functions take `db` so callers can pass a transaction. The finders take `now`
 * and never return an expired row: the provider must not see one even before housekeeping has
 * deleted it, and a lookup by `uid` or `user_code` that meets an old expired row beside a live
 * one must pick the live one.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface OidcPayloadsTable {
  /** The provider's model name: `Session`, `Grant`, `AccessToken`, `Interaction`… */
  model: string;
  /** The model's id (`jti`), unique within the model. */
  id: string;
  /** The payload as the provider gave it, as JSON; read it only through the adapter. */
  payload: string;
  /** Copied from the payload for revocation by grant; set only on the models a grant revokes. */
  grant_id: string | null;
  /** Copied from the payload (device flow). */
  user_code: string | null;
  /** Copied from the payload (Session's fixed id; its `id` changes when the session is renewed). */
  uid: string | null;
  /** Copied from the payload: the Gatehouse user the row belongs to, when it belongs to one. */
  account_id: string | null;
  /** Epoch ms after which the row is dead; null: never. */
  expires_at: number | null;
  /** Epoch ms when the provider marked it used (a code, a refresh token); null: not used. */
  consumed_at: number | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    oidc_payloads: OidcPayloadsTable;
  }
}

export type OidcPayloadRow = Selectable<OidcPayloadsTable>;

/**
 * Writes the row, replacing one of the same model and id whole (its `consumed_at` too: a payload
 * saved again starts unused, as the provider's own memory adapter has it). One statement, so two
 * writers racing on an id both succeed and the last one wins, on SQLite and PostgreSQL alike.
 */
export async function upsertOidcPayload(db: Db, row: OidcPayloadRow): Promise<void> {
  const { model: _model, id: _id, ...replaced } = row;
  await db
    .insertInto('oidc_payloads')
    .values(row)
    .onConflict((conflict) => conflict.columns(['model', 'id']).doUpdateSet(replaced))
    .execute();
}

export async function findOidcPayload(db: Db, model: string, id: string, now: number): Promise<OidcPayloadRow | undefined> {
  return liveRows(db, model, now).where('id', '=', id).executeTakeFirst();
}

export async function findOidcPayloadByUserCode(db: Db, model: string, userCode: string, now: number): Promise<OidcPayloadRow | undefined> {
  return liveRows(db, model, now).where('user_code', '=', userCode).limit(1).executeTakeFirst();
}

export async function findOidcPayloadByUid(db: Db, model: string, uid: string, now: number): Promise<OidcPayloadRow | undefined> {
  return liveRows(db, model, now).where('uid', '=', uid).limit(1).executeTakeFirst();
}

/** The model's rows that have not expired at `now` (a row expires at its `expires_at`, not after). */
function liveRows(db: Db, model: string, now: number) {
  return db
    .selectFrom('oidc_payloads')
    .selectAll()
    .where('model', '=', model)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
}

/** Marks the row used at `now` (again, if it was); false when there is no such row. */
export async function consumeOidcPayload(db: Db, model: string, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('oidc_payloads').set({ consumed_at: now }).where('model', '=', model).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function destroyOidcPayload(db: Db, model: string, id: string): Promise<void> {
  await db.deleteFrom('oidc_payloads').where('model', '=', model).where('id', '=', id).execute();
}

/** Every row of the grant, whatever its model; the number deleted. */
export async function deleteOidcPayloadsByGrantId(db: Db, grantId: string): Promise<number> {
  const result = await db.deleteFrom('oidc_payloads').where('grant_id', '=', grantId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Every row of the account, whatever its model (its provider sessions, grants and tokens, so
 * consents are asked again); the number deleted. For when all of a user's Gatehouse sessions end.
 */
export async function deleteOidcPayloadsByAccountId(db: Db, accountId: string): Promise<number> {
  const result = await db.deleteFrom('oidc_payloads').where('account_id', '=', accountId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Deletes at most `limit` rows that expired before `now` (one housekeeping batch); the number
 * deleted. The outer condition is repeated so a row saved again meanwhile, with a new expiry, stays.
 */
export async function deleteExpiredOidcPayloads(db: Db, now: number, limit = 1_000): Promise<number> {
  const result = await db
    .deleteFrom('oidc_payloads')
    .where((eb) =>
      eb(
        eb.refTuple('model', 'id'),
        'in',
        eb.selectFrom('oidc_payloads').select(['model', 'id']).where('expires_at', '<', now).limit(limit).$asTuple('model', 'id'),
      ),
    )
    .where('expires_at', '<', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * The account's `Grant` rows (what it consented to, by client), by id; with `now`, only those not
 * expired at `now`. Their `payload` is the provider's Grant JSON (`clientId`, `openid.scope`…).
 */
export async function listGrantsByAccount(db: Db, accountId: string, now?: number): Promise<OidcPayloadRow[]> {
  let query = db.selectFrom('oidc_payloads').selectAll().where('model', '=', 'Grant').where('account_id', '=', accountId);
  if (now !== undefined) query = query.where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  return query.orderBy('id').execute();
}
