/** The body every successful sign-in answers with (`POST /api/auth`'s contract), whatever its factors. */
import type { User } from '../users/user.service.ts';
import type { StartedSession } from '../sessions/session.types.ts';
import { isoTime } from '../lib/clock.ts';

export function signInBody({ user, session }: { user: Pick<User, 'id' | 'email' | 'name'>; session: StartedSession }) {
  return {
    token: session.accessToken,
    user: { id: user.id, email: user.email, name: user.name },
    refreshToken: session.refreshToken,
    expiresAt: isoTime(session.accessTokenExpiresAt),
  };
}
