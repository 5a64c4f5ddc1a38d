/**
 * Hot queries, compiled once instead of rebuilt on every call. Kysely's builder (node trees, frozen
 * copies, the compiler's visitor) was 15–21 % of a request's time in the profiles of the session
 * check and sign-in (perf/analysis.md); the SQL it produces never changes, only the values.
 *
 *   const findById = preparedQuery((db, id: string) => db.selectFrom('users').selectAll().where('id', '=', id));
 *   const { rows } = await findById(db, userId);
 *
 * `build` runs once per database (a transaction of `db` shares `db`'s compiled form: same dialect,
 * same adapter; an instance with plugins of its own gets its own) with marker values in place of
 * the arguments; every later call reuses the compiled SQL and swaps the real values in by
 * position. So `build` must pass each argument straight to Kysely as a value (no arithmetic or
 * branching on it), and must use every argument, which is checked when it is compiled.
 *
 * On SQLite a prepared SELECT on the root instance (not in a transaction) is read on the storage's
 * read-only connection, synchronously (`hotReaderOf` in database.ts): it sees what is committed,
 * as it would through Kysely, without queueing behind a transaction of another request.
 */
import type { Compilable, CompiledQuery, Insertable, QueryResult } from 'kysely';
import { hotReaderOf, type Db } from './database.ts';
import type { Database } from './schema.ts';

interface Prepared<R> {
  compiled: CompiledQuery<R>;
  /** For each SQL parameter: the index of the argument it takes, or the constant the builder put there. */
  slots: ReadonlyArray<{ argument: number } | { constant: unknown }>;
  isSelect: boolean;
}

export function preparedQuery<A extends unknown[], R>(build: (db: Db, ...args: A) => Compilable<R>): (db: Db, ...args: A) => Promise<QueryResult<R>> {
  return compileOnce(build.length - 1, build);
}

/**
 * An insert of whole rows into `table`, compiled once. `columns` names every column of the table
 * (the type checks it is all of them, so a column added later cannot be silently left out).
 */
export function preparedInsert<T extends keyof Database>(table: T, columns: Record<keyof Insertable<Database[T]> & string, true>) {
  const names = Object.keys(columns);
  const insert = compileOnce(names.length, (db, ...values: unknown[]) =>
    db.insertInto(table).values(Object.fromEntries(names.map((column, i) => [column, values[i]])) as never),
  );
  return async (db: Db, row: Insertable<Database[T]>): Promise<void> => {
    const record = row as Record<string, unknown>;
    await insert(db, ...names.map((column) => record[column] ?? null));
  };
}

function compileOnce<A extends unknown[], R>(arity: number, build: (db: Db, ...args: A) => Compilable<R>): (db: Db, ...args: A) => Promise<QueryResult<R>> {
  // Keyed by the dialect's adapter, which a transaction shares with its root instance: a sign-in's
  // transaction (session, audit event, counters) used to compile each of its statements anew.
  const byDb = new WeakMap<object, Prepared<R>>();
  const markers = Array.from({ length: arity }, (_, i) => `\u0000prepared-argument-${i}\u0000`);

  function prepare(db: Db): Prepared<R> {
    const compiled = build(db, ...(markers as unknown as A)).compile();
    const slots = compiled.parameters.map((value) => {
      const argument = typeof value === 'string' ? markers.indexOf(value) : -1;
      return argument === -1 ? { constant: value } : { argument };
    });
    const used = new Set(slots.flatMap((slot) => ('argument' in slot ? [slot.argument] : [])));
    if (used.size !== markers.length) throw new Error(`preparedQuery: every argument must be a value in the query (${compiled.sql})`);
    return { compiled, slots, isSelect: compiled.query.kind === 'SelectQueryNode' };
  }

  return async (db, ...args) => {
    const key = compiledFormKey(db);
    let prepared = byDb.get(key);
    if (prepared === undefined) {
      prepared = prepare(db);
      byDb.set(key, prepared);
    }
    const parameters = prepared.slots.map((slot) => ('argument' in slot ? args[slot.argument] : slot.constant));
    const query = { ...prepared.compiled, parameters };
    // SQLite, outside a transaction: a SELECT is read on the read-only connection, at once.
    if (prepared.isSelect) {
      const read = hotReaderOf(db);
      if (read !== undefined) return { rows: read(query) as R[] };
    }
    return db.executeQuery(query);
  };
}

/**
 * What a compiled query can be shared by: the executor's adapter (one per Kysely instance, kept by
 * its transactions) when no plugin rewrites queries; otherwise the instance itself.
 */
function compiledFormKey(db: Db): object {
  const executor = db.getExecutor();
  return executor.plugins.length === 0 ? executor.adapter : db;
}
