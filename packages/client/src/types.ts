/** The shapes gatehouse-client speaks in: tokens, sessions, results and errors. */

/** The tokens a sign-in or a refresh answers with; what a `TokenStorage` keeps. */
export interface StoredTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires (ISO 8601, from the service). */
  expiresAt: string;
}

/**
 * Where the tokens live. `get`/`set` may be synchronous or not (e.g. a native app's async store).
 * `sharedKey` says that other instances (other tabs) see the same tokens under that name: the
 * client then coordinates refreshes with them (Web Locks) and tells them of sign-in and sign-out
 * (BroadcastChannel). Leave it out for storage that belongs to one instance.
 */
export interface TokenStorage {
  get(): StoredTokens | null | Promise<StoredTokens | null>;
  set(tokens: StoredTokens | null): void | Promise<void>;
  readonly sharedKey?: string;
}

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  roles: string[];
}

/** `GET /api/auth/session`'s answer. */
export interface Session {
  user: SessionUser;
  session: {
    id: string;
    /** Absolute end of the session (not of the access token). */
    expiresAt: string;
    /** How the user proved who they are (RFC 8176): pwd, otp, mfa, hwk… */
    amr: string[];
    authTime: string;
  };
}

export type SessionState =
  | { status: 'loading'; session: null }
  | { status: 'signed-in'; session: Session }
  | { status: 'signed-out'; session: null };

/** The service's stable codes this client meets, and its own five (last line). */
export type GatehouseErrorCode =
  | 'INVALID_CREDENTIALS' | 'ACCOUNT_DISABLED' | 'EMAIL_NOT_VERIFIED' | 'RATE_LIMITED' | 'VALIDATION_ERROR'
  | 'INVALID_CODE' | 'INVALID_TOKEN' | 'TOKEN_REUSED' | 'UNAUTHENTICATED' | 'CSRF_FAILED'
  | 'INVALID_PASSKEY' | 'PASSKEY_NOT_FOUND'
  | 'SERVICE_UNAVAILABLE' | 'INTERNAL_ERROR' | 'MALFORMED_JSON' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE'
  | 'NETWORK_ERROR' | 'UNEXPECTED_RESPONSE' | 'PASSKEY_UNAVAILABLE' | 'PASSKEY_CANCELLED' | 'STORAGE_OUT_OF_SYNC';

export interface GatehouseError {
  /** The service's `error` code, or one of this client's (the last line of `GatehouseErrorCode`). */
  code: GatehouseErrorCode | (string & {});
  message: string;
  /** The HTTP status; absent when no answer came. */
  status?: number;
  /** From `Retry-After` (RATE_LIMITED, SERVICE_UNAVAILABLE). */
  retryAfterSeconds?: number;
  /** VALIDATION_ERROR: every bad field. */
  errors?: { field: string; message: string; reason?: string }[];
  /** NETWORK_ERROR: what fetch threw; PASSKEY_CANCELLED: what the WebAuthn ceremony threw. */
  cause?: unknown;
}

/** A code from the authenticator app, a recovery code, or `{ passkey: true }`: a passkey of the user's, in the browser (WebAuthn). */
export type SecondFactorAnswer = { code: string } | { recoveryCode: string } | { passkey: true };

export type SignInResult =
  | { status: 'signed-in'; session: Session }
  | {
      status: 'second-factor';
      /** Lives 5 minutes and allows 5 wrong codes; keep it if the page may reload. */
      mfaToken: string;
      /** What the challenge may be answered with: 'totp', 'recovery_code', 'passkey'. */
      methods: string[];
      /** Answers this challenge (in both modes); may be called again after an INVALID_CODE or a PASSKEY_CANCELLED. */
      verifySecondFactor(answer: SecondFactorAnswer): Promise<SignInResult>;
    }
  | { status: 'error'; error: GatehouseError };

export type SessionResult = { status: 'signed-in'; session: Session } | { status: 'signed-out' } | { status: 'error'; error: GatehouseError };

/** 'signed-out': the refresh token was refused (tokens forgotten); 'error': try again later (tokens kept). */
export type RefreshResult = { status: 'refreshed' } | { status: 'signed-out'; error: GatehouseError } | { status: 'error'; error: GatehouseError };

/** This client forgets the session either way; 'error' means the service may not have ended it. */
export type SignOutResult = { status: 'signed-out' } | { status: 'error'; error: GatehouseError };

export interface GatehouseClientOptions {
  /** The service's AUTH_URL, e.g. `https://auth.example.com`. */
  baseUrl: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Token mode only. Defaults to `memoryStorage()`. */
  storage?: TokenStorage;
  /**
   * 'tokens' (default): the client holds the tokens and sends `Authorization: Bearer`.
   * 'cookies': apps served from Gatehouse's origin; the service's HttpOnly cookies carry the
   * session, no token is kept in JavaScript, requests go with `credentials: 'include'` and a CSRF
   * token. Second factors and passkeys work in both.
   */
  mode?: 'tokens' | 'cookies';
  /** Refresh this long before the access token expires (default 30; expired tokens are always refreshed first). */
  refreshAheadSeconds?: number;
  /** Called on every change of `getState()`, including changes made in other tabs. */
  onSessionChange?: (state: SessionState) => void;
}

export interface GatehouseClient {
  signIn(credentials: { email: string; password: string }): Promise<SignInResult>;
  /**
   * Signs in with any passkey the browser's authenticator holds for Gatehouse (WebAuthn; the
   * session proves two factors). PASSKEY_UNAVAILABLE without WebAuthn, PASSKEY_CANCELLED when the
   * prompt was closed, INVALID_PASSKEY when Gatehouse refuses the answer.
   */
  signInWithPasskey(): Promise<SignInResult>;
  /** Finishes a sign-in that answered 'second-factor' (e.g. after a reload, with the kept mfaToken). */
  verifySecondFactor(answer: SecondFactorAnswer & { mfaToken: string }): Promise<SignInResult>;
  signOut(): Promise<SignOutResult>;
  /** Asks the service (refreshing once if the access token is refused) and updates `getState()`. */
  getSession(): Promise<SessionResult>;
  /** Rotates the refresh token; concurrent calls, here and in other tabs, share one rotation. */
  refresh(): Promise<RefreshResult>;
  /** `fetch` with the session: throws on network failure like fetch; a 401 refreshes once and retries once. */
  fetch(input: Request | string | URL, init?: RequestInit): Promise<Response>;
  getState(): SessionState;
  subscribe(listener: (state: SessionState) => void): () => void;
  /** Stops listening to other tabs (and lets go of the Web Lock that marks its last refresh for them). */
  close(): void;
}
