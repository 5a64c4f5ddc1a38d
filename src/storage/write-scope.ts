/**
 * Writes of shared stores (the storage-backed rate-limit counters) joined to a transaction of the
 * caller's: inside `writingIn(db, trx, work)`, a store that writes through `writerFor(db)` writes in
 * `trx`, so several counters and what goes with them (a session, its audit event) commit together,
 * once, instead of each in its own transaction. Their reads go through `readerFor(db)`: on SQLite
 * the read-only connection still (committed state, at once; the counters a scope reads are never
 * ones it has written yet), elsewhere the transaction too (on PostgreSQL a transaction waiting
 * for a second pool connection to read could starve the pool).
 *
 * `work` must finish inside the transaction (await everything it starts): a write after the
 * commit would find the transaction gone.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { hotReaderOf, type Db } from './database.ts';

const scope = new AsyncLocalStorage<{ root: Db; trx: Db }>();

/** Runs `work` with `trx` (a transaction of `root`) as the writer of stores on `root`. */
export function writingIn<T>(root: Db, trx: Db, work: () => Promise<T>): Promise<T> {
  return scope.run({ root, trx }, work);
}

/** Where a store on `root` writes now: the transaction of an enclosing `writingIn` on `root`, else `root`. */
export function writerFor(root: Db): Db {
  const current = scope.getStore();
  return current !== undefined && current.root === root ? current.trx : root;
}

/** Where a store on `root` reads now: on SQLite's read-only connection when `root` has one, else as `writerFor`. */
export function readerFor(root: Db): Db {
  return hotReaderOf(root) === undefined ? writerFor(root) : root;
}
