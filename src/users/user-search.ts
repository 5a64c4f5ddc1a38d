/**
 * What the admin users search asks for, read from the text an operator typed (the console's box,
 * `GET /api/admin/users?query=`, `gatehouse users list --query`). The syntax is Keycloak's, which
 * operators of large stores already know:
 * - `ann` or `ann*`: the address, or a word of the name, **starts with** `ann` (the default);
 * - `*ann` or `*ann*`: the address or the name **contains** `ann` anywhere;
 * - `"ann@example.com"`: the address or the whole name **is** the text.
 * Matching is case-insensitive; any other `*`, `%` or `_` is a character like the rest. Text with an
 * `@` is an address: without a leading star only the address is asked (`scope`).
 *
 * Why the default is a prefix: a start is found by walking a B-tree (O(log n)) at any size, where a
 * substring needs trigram indexes whose common trigrams (a shared domain, a frequent first name)
 * are read whole: at 10,000,000 users a whole address took 3 × its time at 10,000 that way
 * (perf/analysis.md, growth). Keycloak made the same change for the same reason.
 */
import { normaliseEmail } from './email.ts';

export type UserSearchMatch = 'prefix' | 'contains' | 'exact';

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
  const trimmed = input.trim();
  if (trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"')) {
    const text = trimmed.slice(1, -1).trim();
    return text === '' ? null : { match: 'exact', text, scope: scopeOf(text) };
  }
  const text = trimmed.replace(/^\*+/, '').replace(/\*+$/, '').trim();
  if (text === '') return null;
  return trimmed.startsWith('*') ? { match: 'contains', text, scope: 'address-or-name' } : { match: 'prefix', text, scope: scopeOf(text) };
}

function scopeOf(text: string): UserSearch['scope'] {
  // As the address is stored: a full-width ＠ is an @ there too.
  return normaliseEmail(text).includes('@') ? 'address' : 'address-or-name';
}
