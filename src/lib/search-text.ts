/**
 * The search syntax of the admin lists (users, organizations): what an operator typed in a console's
 * box, an API's `query` or a command's `--query`, read the way Keycloak reads it, which operators of
 * large stores already know:
 * - `ann` or `ann*`: **starts with** `ann` (the default);
 * - `*ann` or `*ann*`: **contains** `ann` anywhere;
 * - `"ann"`: **is** `ann`.
 * Any other `*`, `%` or `_` is a character like the rest; each list says what the text is matched
 * against (users/user-search.ts, organizations/organizations.store.ts).
 *
 * Why the default is a start: a start is found by walking a B-tree (O(log n)) at any size, where a
 * substring needs trigram indexes whose common trigrams are read whole (perf/analysis.md, growth).
 */

export type SearchMatch = 'prefix' | 'contains' | 'exact';

export interface SearchText {
  match: SearchMatch;
  /** The text itself, without the syntax's quotes and stars, trimmed; never empty. */
  text: string;
}

/** What `input` asks for; null when it asks for nothing (empty, blank, `*`, `""`). */
export function parseSearchText(input: string): SearchText | null {
  const trimmed = input.trim();
  if (trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"')) {
    const text = trimmed.slice(1, -1).trim();
    return text === '' ? null : { match: 'exact', text };
  }
  const text = trimmed.replace(/^\*+/, '').replace(/\*+$/, '').trim();
  if (text === '') return null;
  return { match: trimmed.startsWith('*') ? 'contains' : 'prefix', text };
}

/** `text` for SQL's LIKE, its own wildcards taken literally (the escape character is `\`: say `escape '\'`, SQLite has none by default). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** `%text%` for LIKE, with LIKE's own wildcards in `text` taken literally. */
export function containsPattern(text: string): string {
  return `%${escapeLike(text)}%`;
}
