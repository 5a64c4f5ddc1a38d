/**
 * Tokens carried by e-mail links: password reset and e-mail verification (single use), and a
 * reset's review of linked providers (checked, not used up: it removes each of them). A token is
 * 32 random bytes (base64url); storage keeps only its SHA-256, so a database leak opens no
 * account. Issuing a token ends the user's older tokens of the same purpose; consuming one is an
 * atomic update, so two requests racing with one token cannot both succeed.
 *
 * `issue` and `consume` take the `db` to use, so a caller can put them in the same transaction as
 * the mail that carries the token (issue) or the change the token authorises (consume).
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import * as store from './action-token.store.ts';

/** `linked_accounts_review`: a password reset's link to remove the providers linked then (oauth module). */
export type ActionTokenPurpose = 'password_reset' | 'email_verification' | 'linked_accounts_review';

export type ActionTokenCheck =
  | { ok: true; tokenId: string; userId: string; expiresAt: number }
  | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' };

/** Tokens are 43 base64url characters; anything else is refused before a lookup. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export type ActionTokens = ReturnType<typeof createActionTokens>;

export function createActionTokens(deps: { clock: Clock }) {
  const { clock } = deps;

  async function check(db: Db, token: unknown, purpose: ActionTokenPurpose): Promise<ActionTokenCheck> {
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return { ok: false, reason: 'INVALID_TOKEN' };
    const row = await store.findActionTokenByHash(db, sha256Base64url(token));
    // A token of another purpose is as good as none: a verification link cannot reset a password.
    if (row === undefined || row.purpose !== purpose || row.consumed_at !== null) return { ok: false, reason: 'INVALID_TOKEN' };
    if (row.expires_at <= clock()) return { ok: false, reason: 'TOKEN_EXPIRED' };
    return { ok: true, tokenId: row.id, userId: row.user_id, expiresAt: row.expires_at };
  }

  return {
    /** Creates a token for the user, ending their older ones of this purpose; returns the token itself (send it, never store or log it). */
    async issue(db: Db, input: { userId: string; purpose: ActionTokenPurpose; ttlSeconds: number }): Promise<{ token: string; expiresAt: number }> {
      const now = clock();
      const token = randomSecret(32);
      const expiresAt = now + input.ttlSeconds * 1000;
      await store.retireActionTokens(db, input.userId, input.purpose, now);
      await store.insertActionToken(db, {
        id: randomId(),
        user_id: input.userId,
        purpose: input.purpose,
        token_hash: sha256Base64url(token),
        created_at: now,
        expires_at: expiresAt,
        consumed_at: null,
      });
      return { token, expiresAt };
    },

    /** Ends every live token of this user and purpose (a password changed: old reset links die). */
    retire(db: Db, userId: string, purpose: ActionTokenPurpose): Promise<void> {
      return store.retireActionTokens(db, userId, purpose, clock());
    },

    /** Whether the token is live for this purpose, without using it up. */
    check,

    /** Uses the token up, atomically; the result says whose it was. */
    async consume(db: Db, token: unknown, purpose: ActionTokenPurpose): Promise<ActionTokenCheck> {
      const checked = await check(db, token, purpose);
      if (!checked.ok) return checked;
      return (await store.consumeActionToken(db, checked.tokenId, clock())) ? checked : { ok: false, reason: 'INVALID_TOKEN' };
    },

    /** What tokens the user was sent, and what became of them (never the tokens or their hashes). */
    async listOf(db: Db, userId: string): Promise<Array<{ purpose: string; createdAt: number; expiresAt: number; consumedAt: number | null }>> {
      return (await store.listActionTokensOf(db, userId)).map((row) => ({ purpose: row.purpose, createdAt: row.created_at, expiresAt: row.expires_at, consumedAt: row.consumed_at }));
    },

    /** Deletes expired tokens, at most `limit` per call (for a bounded background purge). */
    purgeExpired(db: Db, limit = 1_000): Promise<number> {
      return store.deleteExpiredActionTokens(db, clock(), limit);
    },
  };
}
