/**
 * What pages tell a person about a code in their URL (`?error=`, `?notice=`). Each feature keeps
 * its own table of messages beside its pages; this is what they share. Codes arrive in query
 * strings, so anyone can put anything there: lookups are own-property only (`?error=constructor`
 * is just unknown), and the code itself is shown back only through the escaping templates.
 */

/** A page-level message: what went wrong, with its code. */
export interface PageError {
  code: string;
  message: string;
}

/** The message for `code` in `table`, or `fallback` for a code the table does not hold. */
export function messageFor<T>(table: Readonly<Record<string, T>>, code: string, fallback: T): T {
  return Object.hasOwn(table, code) ? table[code]! : fallback;
}
