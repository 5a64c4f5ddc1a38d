/**
 * What the admin users search asks for, read from the text an operator typed (the console's box,
 * `GET /api/admin/users?query=`, `gatehouse users list --query`), in the admin lists' syntax
 * (lib/search-text.ts): `ann` (or `ann*`) finds an address, or a word of the name, that **starts
 * with** `ann` (the default); `*ann` one that **contains** it; `"ann@example.com"` an address or a
 * whole name that **is** the text. Matching is case-insensitive. Text with an `@` is an address:
 * without a leading star only the address is asked (`scope`).
 *
 * Why the default is a prefix: at 10,000,000 users a whole address took 3 × its time at 10,000 as a
 * substring search (perf/analysis.md, growth). Keycloak made the same change for the same reason.
 */
import { normaliseEmail } from './email.ts';
import { parseSearchText, type SearchMatch } from '../lib/search-text.ts';

export type UserSearchMatch = SearchMatch;

export interface UserSearch {
  match: UserSearchMatch;
  /** The text itself, without the syntax's quotes and stars, trimmed; never empty. */
  text: string;
  /**
   * What is asked: the address alone for text holding an `@` (a start, or exactly), found by the
   * address's B-tree; the name's trigram lists would cost more at 10,000,000 users than the whole
   * lookup (perf/analysis.md, growth) to find names nobody has. Otherwise, and anywhere (`*text`),
   * the address or the name.
   */
  scope: 'address' | 'address-or-name';
}

/** The search `input` asks for; null when it asks for nothing (empty, blank, `*`, `""`). */
export function parseUserSearch(input: string): UserSearch | null {
  const search = parseSearchText(input);
  if (search === null) return null;
  return { ...search, scope: search.match === 'contains' ? 'address-or-name' : scopeOf(search.text) };
}

function scopeOf(text: string): UserSearch['scope'] {
  // As the address is stored: a full-width ＠ is an @ there too.
  return normaliseEmail(text).includes('@') ? 'address' : 'address-or-name';
}
