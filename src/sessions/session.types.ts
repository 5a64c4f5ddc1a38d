/** What the session service hands out and takes: sessions started, who a token speaks for, the views of a session. */

export interface StartedSession {
  sessionId: string;
  accessToken: string;
  /** Epoch ms. */
  accessTokenExpiresAt: number;
  refreshToken: string;
  /** Epoch ms: the absolute end of the session. */
  sessionExpiresAt: number;
}

/** Who a valid access token speaks for. */
export interface AuthContext {
  userId: string;
  sessionId: string;
  roles: readonly string[];
  /** How the user proved who they are in this session (RFC 8176 `amr` values); empty when not known. */
  amr: readonly string[];
  /** Epoch ms: when they last did (sign-in or step-up). */
  authTime: number;
  /** Epoch ms: when the presented access token expires. */
  accessTokenExpiresAt: number;
  /** Database strategy: the profile the check read with the session, so the session endpoint need not read it again. */
  profile?: SessionProfileView;
  /**
   * The claims modules add (the active organization, say): jwt strategy, those of the presented
   * token; database strategy, read with the session by the check.
   */
  moduleClaims?: Readonly<Record<string, unknown>>;
}

/** What the session endpoint shows beyond ids and roles. */
export interface SessionProfileView {
  email: string;
  name: string;
  /** Epoch ms: the absolute end of the session. */
  expiresAt: number;
}

export interface SessionView {
  user: { id: string; email: string; name: string; roles: string[] };
  session: { id: string; expiresAt: number; amr: string[]; authTime: number };
  /**
   * The claims modules add to access tokens (`org`, the active organization, say): the jwt
   * strategy shows the presented token's, the database strategy reads them fresh.
   */
  claims: Record<string, unknown>;
}

export interface SessionSummary {
  id: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  ip: string | null;
  userAgent: string | null;
}

export type RefreshResult =
  | { ok: true; session: StartedSession }
  | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_REUSED' };

export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}
