/**
 * Table types as Kysely sees them. Times are epoch milliseconds (integers in SQLite, BIGINT in
 * PostgreSQL, parsed back to numbers) so both dialects read and compare them the same way.
 */
import type { Generated, Insertable, Selectable } from 'kysely';

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  email_verified_at: number | null;
  disabled_at: number | null;
  created_at: number;
  updated_at: number;
  /** Set after too many consecutive failed sign-ins; the password is refused until a reset. */
  password_locked_at: number | null;
  /** When the name became one mails may greet the user by; null while only a sign-up typed it (see users/name.ts). */
  name_confirmed_at: number | null;
  /** The language of the account's mails (a tag of i18n/locales.ts); null until known (see users/locale.ts). */
  locale: string | null;
}

export interface UserRolesTable {
  user_id: string;
  role: string;
  created_at: number;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  /** Secret per session; refresh tokens are HMAC(key from AUTH_SECRET, id.seed.generation). */
  refresh_seed: string;
  /** The generation of the one refresh token that is live; older ones are spent. */
  refresh_generation: number;
  refresh_rotated_at: number | null;
  created_at: number;
  expires_at: number;
  last_seen_at: number;
  revoked_at: number | null;
  ip: string | null;
  user_agent: string | null;
  /** How the user proved who they are (RFC 8176 values, `,`-separated); null before it was recorded. */
  amr: string | null;
  /** Epoch ms of the last proof (sign-in or step-up); null before it was recorded: read `created_at`. */
  auth_time: number | null;
}

export interface SigningKeysTable {
  kid: string;
  algorithm: string;
  public_jwk: string;
  /** The private JWK as a compact JWE (`dir` + A256GCM) under a key derived from AUTH_SECRET. */
  private_jwk_encrypted: string;
  created_at: number;
  /** Keys are never deleted while a token they signed may still be valid; they are retired. */
  retired_at: number | null;
}

export interface RevokedSessionsTable {
  seq: Generated<number>;
  session_id: string;
  /** When the last access token this revocation covers expires; the entry is useless after. */
  expires_at: number;
  created_at: number;
}

export interface AuditEventsTable {
  id: string;
  /** A stable, lower-case dotted name such as `signin.failure` (see `AUDIT_EVENT_TYPES`). */
  type: string;
  user_id: string | null;
  /** Who did it, when not the user themself signing in: an admin, or the user ending a session. */
  actor_user_id: string | null;
  /** Only on sign-in failures: the normalised address that was tried. */
  email: string | null;
  ip: string | null;
  user_agent: string | null;
  /** A stable UPPER_SNAKE code, e.g. INVALID_CREDENTIALS. */
  reason: string | null;
  /** Small JSON object, e.g. roles before and after. Never a secret. */
  details: string | null;
  created_at: number;
}

export type MailStatus = 'pending' | 'sent' | 'failed';

export interface MailOutboxTable {
  id: string;
  to_address: string;
  /** A `TemplateName` of `mail/templates.ts`. */
  template: string;
  /** The rendered message, sealed under a key derived from AUTH_SECRET; null once sent by SMTP. A secret. */
  payload: string | null;
  status: MailStatus;
  /** Tries started so far (a try is counted when a worker claims the row). */
  attempts: number;
  next_attempt_at: number;
  /** A worker holds the row until then; after it, another may take it over. */
  locked_until: number | null;
  locked_by: string | null;
  /** A short error code and server reply of the last failure; never the payload. */
  last_error: string | null;
  delivered_via: 'smtp' | 'dev-outbox' | null;
  created_at: number;
  sent_at: number | null;
}

export interface ActionTokensTable {
  id: string;
  user_id: string;
  /** What the token may do: `password_reset` or `email_verification`. */
  purpose: string;
  /** SHA-256 (base64url) of the token; the token itself is only ever in the e-mail. */
  token_hash: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

export interface OAuthAccountsTable {
  id: string;
  user_id: string;
  /** A provider id of the configuration: `github`, `google` or `oidc`. */
  provider: string;
  /** The provider's stable id for the person (`sub`; GitHub's numeric id as a string). */
  provider_user_id: string;
  /** The address the provider gave at the last sign-in; for display, never for lookups. */
  email: string | null;
  created_at: number;
  last_used_at: number;
}

export interface RateLimitsTable {
  /** `<limiter>:<subject>`, e.g. `signin-ip:203.0.113.7`; accounts by a hash of the address. */
  key: string;
  points: number;
  /** Epoch ms when the window ends; null: never. */
  expire: number | null;
}

export interface Database {
  users: UsersTable;
  user_roles: UserRolesTable;
  sessions: SessionsTable;
  signing_keys: SigningKeysTable;
  revoked_sessions: RevokedSessionsTable;
  action_tokens: ActionTokensTable;
  audit_events: AuditEventsTable;
  mail_outbox: MailOutboxTable;
  oauth_accounts: OAuthAccountsTable;
  rate_limits: RateLimitsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type SessionRow = Selectable<SessionsTable>;
export type SigningKeyRow = Selectable<SigningKeysTable>;
export type AuditEventRow = Selectable<AuditEventsTable>;
export type MailOutboxRow = Selectable<MailOutboxTable>;
export type { Generated };
export type ActionTokenRow = Selectable<ActionTokensTable>;
export type OAuthAccountRow = Selectable<OAuthAccountsTable>;
