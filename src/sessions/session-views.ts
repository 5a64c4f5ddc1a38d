/** What the session service makes of its rows: the session endpoint's view, and how a session was proved. */
import type { AuthContext, SessionProfileView, SessionView } from './session.types.ts';

export function toSessionView(auth: AuthContext, roles: readonly string[], profile: SessionProfileView, claims: Readonly<Record<string, unknown>>): SessionView {
  return {
    user: { id: auth.userId, email: profile.email, name: profile.name, roles: [...roles] },
    session: { id: auth.sessionId, expiresAt: profile.expiresAt, amr: [...auth.amr], authTime: auth.authTime },
    claims: { ...claims },
  };
}

/** The `amr` column: `,`-separated methods (none ever holds a comma). */
export const toAmr = (column: string | null): readonly string[] => (column === null || column === '' ? [] : column.split(','));

/**
 * How and when a stored session's user proved themselves (sessions from before this was recorded:
 * nothing known, at its start), in whole seconds like the token's `auth_time`, so both strategies
 * tell the same time.
 */
export const authenticationOf = (row: { amr: string | null; auth_time: number | null; created_at: number }) => ({
  amr: toAmr(row.amr),
  authTime: Math.floor((row.auth_time ?? row.created_at) / 1000) * 1000,
});

/** Cuts to at most `max` UTF-16 units without splitting a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}
