/**
 * Keyset pagination over rows ordered newest first by (created_at, id). A page's cursor is the
 * position of its last row, opaque to clients (base64url), so the next page starts strictly after
 * it: stable while rows are added, and no OFFSET scan.
 */
export interface KeysetPosition {
  /** Epoch ms. */
  createdAt: number;
  id: string;
}

const CURSOR_PATTERN = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/;

export function encodeCursor(position: KeysetPosition): string {
  return Buffer.from(`${position.createdAt}.${position.id}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or null when it is not one we made. */
export function decodeCursor(cursor: string): KeysetPosition | null {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const match = CURSOR_PATTERN.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match === null) return null;
  const createdAt = Number(match[1]);
  return Number.isSafeInteger(createdAt) ? { createdAt, id: match[2]! } : null;
}

/** Splits a `limit + 1` query result into the page and the position to continue from. */
export function toPage<T>(rows: T[], limit: number, positionOf: (row: T) => KeysetPosition): { items: T[]; next: KeysetPosition | null } {
  if (rows.length <= limit) return { items: rows, next: null };
  const items = rows.slice(0, limit);
  return { items, next: positionOf(items[items.length - 1]!) };
}
