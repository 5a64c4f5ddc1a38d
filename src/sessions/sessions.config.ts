/** The sessions section of the configuration: the strategy, session lifetimes and access tokens. */
import type { ConfigSection } from '../config.ts';

export type SessionStrategy = 'database' | 'jwt';

declare module '../config.ts' {
  interface Config {
    readonly sessionStrategy: SessionStrategy;
    readonly tokens: {
      readonly issuer: string;
      readonly audience: string;
      readonly accessTokenTtlSeconds: number;
    };
    readonly sessions: {
      readonly maxAgeSeconds: number;
      /** A session unused for this long ends, whatever its absolute expiry. */
      readonly idleTimeoutSeconds: number;
      /** Sliding expiry writes `last_seen_at` at most this often per session. */
      readonly touchIntervalSeconds: number;
      /** How long a just-rotated refresh token is still honoured (concurrent tabs). */
      readonly refreshReuseGraceSeconds: number;
      /** jwt strategy: how often each instance pulls revocations made by the others. */
      readonly revocationSyncIntervalMs: number;
    };
  }
}

/** The sessions module's section: `sessionStrategy`, `sessions` and `tokens` (issued by AUTH_URL). */
export const sessionsConfigSection: ConfigSection = (read, { authUrl }, problems) => {
  const sessionStrategy = read.oneOf('SESSION_STRATEGY', ['database', 'jwt'] as const, 'database');
  const maxAgeSeconds = read.duration('SESSION_MAX_AGE', 30 * 86_400);
  const idleTimeoutSeconds = read.duration('SESSION_IDLE_TIMEOUT', 7 * 86_400);
  const touchIntervalSeconds = read.duration('SESSION_TOUCH_INTERVAL', 5 * 60);
  const refreshReuseGraceSeconds = read.duration('REFRESH_REUSE_GRACE', 10);
  if (refreshReuseGraceSeconds > 60) {
    problems.push('REFRESH_REUSE_GRACE must be at most 60s: longer would let a stolen refresh token go unnoticed');
  }
  if (touchIntervalSeconds * 2 > idleTimeoutSeconds) {
    problems.push('SESSION_TOUCH_INTERVAL must be at most half of SESSION_IDLE_TIMEOUT, or sessions in use would time out');
  }
  const revocationSyncIntervalMs = read.integer('REVOCATION_SYNC_INTERVAL_MS', 1_000, { min: 100, max: 60_000 });
  // In the database strategy every request checks the session row, so the token may live as long
  // as the session; in the jwt strategy the token is the only check and must be short-lived.
  const accessTokenTtlSeconds = read.duration('ACCESS_TOKEN_TTL', sessionStrategy === 'jwt' ? 15 * 60 : maxAgeSeconds);
  const audience = read.string('AUTH_AUDIENCE') ?? authUrl!;
  return {
    sessionStrategy,
    tokens: { issuer: authUrl!, audience, accessTokenTtlSeconds },
    sessions: { maxAgeSeconds, idleTimeoutSeconds, touchIntervalSeconds, refreshReuseGraceSeconds, revocationSyncIntervalMs },
  };
};
