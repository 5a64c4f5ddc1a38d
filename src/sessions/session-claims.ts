/**
 * Token claims a module adds (`tokenClaims` in the module contract), read *with the session*: each
 * module gives a query on its own tables correlated with the session row being read (`sessions.id`,
 * `sessions.user_id`), and how its row becomes claims. The sessions store folds every module's
 * query into the one statement that reads the session, as a JSON object per module:
 *
 *   select sessions.…, users.…, (roles),
 *          (select to_json(obj) from (<organizations' query>) as obj) as claims_0,
 *          (select to_json(obj) from (<impersonation's query>) as obj) as claims_1
 *   from sessions join users … where sessions.id = $1
 *
 * So the database strategy checks a session, its user, roles and every module's claims in one
 * round trip, and the sessions module never names another module's table: the module owns its
 * query, the store only composes them. A token being issued reads the same claims the same way.
 */
import { sql, type AliasedExpression, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import { jsonObjectFrom as postgresJsonObject } from 'kysely/helpers/postgres';
import { jsonObjectFrom as sqliteJsonObject } from 'kysely/helpers/sqlite';
import type { Database } from '../storage/schema.ts';

/** The session being read, for a claims query's correlated references (`sessions.id`, `sessions.user_id`). */
export type SessionScope = ExpressionBuilder<Database, 'sessions'>;

export interface TokenClaimsRead<Row extends object = Record<string, unknown>> {
  /**
   * At most one row (the first counts), from the module's own tables, correlated with the session
   * through `sessions.id` or `sessions.user_id`. Plain columns: they travel as a JSON object.
   */
  select(session: SessionScope): SelectQueryBuilder<Database, keyof Database, Row>;
  /**
   * The claims that row gives (null: no row), in every access token of the session and in the
   * session endpoint's view. Small and never personal data; a reserved claim (`sub`, `roles`…) is
   * refused when a token is signed.
   */
  claims(row: Row | null): Readonly<Record<string, unknown>>;
}

/** A module's claims read, typed by its row (`tokenClaims: () => defineTokenClaims({ … })`). */
export function defineTokenClaims<Row extends object>(read: TokenClaimsRead<Row>): TokenClaimsRead<Row> {
  return read;
}

const ONE = sql.lit(1);

/**
 * Each read as one JSON column of the session read, in the storage's dialect. The limit is written
 * into the SQL, not bound: SQLite plans a correlated subquery whose LIMIT is a parameter far worse
 * (about 70 µs more per claims column per check, measured on the read-only connection; 9 µs with
 * the literal), which had halved the database strategy's session check.
 */
export function claimsColumns(reads: readonly TokenClaimsRead<object>[], isPostgres: boolean, session: SessionScope): AliasedExpression<unknown, string>[] {
  const jsonObjectFrom = isPostgres ? postgresJsonObject : sqliteJsonObject;
  return reads.map((read, index) => jsonObjectFrom(read.select(session).limit(ONE)).as(`claims_${index}`));
}

/**
 * The claims every read gives for a row holding the `claims_<n>` columns (JSON text on SQLite,
 * parsed already on PostgreSQL), merged in module order.
 */
export function claimsOfRow(reads: readonly TokenClaimsRead<object>[], row: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  const claims: Record<string, unknown> = {};
  for (let index = 0; index < reads.length; index++) {
    const value = row[`claims_${index}`];
    const parsed = typeof value === 'string' ? (JSON.parse(value) as object) : ((value ?? null) as object | null);
    Object.assign(claims, reads[index]!.claims(parsed));
  }
  return claims;
}
