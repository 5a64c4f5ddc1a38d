/**
 * OpenID Back-Channel Logout 1.0, sent by Gatehouse: when a person signed in to Gatehouse signs out
 * (or the session otherwise ends, or all of them do), every app they signed in to from that
 * session that registered a `backchannel_logout_uri` gets a logout token, so its own session of
 * them ends too (gatehouse-protect's sign-in mode has the endpoint).
 *
 * - When an app is authorized, the Gatehouse session of the browser, the app and the `sid` the app
 *   knows the sign-in by are linked (`oidc_logout_links`); only apps with a back-channel URI are.
 * - A session's end (its domain event, in its transaction) turns its links into deliveries in an
 *   outbox (`oidc_logout_deliveries`), so a sign-out commits with what it owes the apps and a
 *   restart loses nothing.
 * - The worker (the shared outbox worker, one lane) makes the logout token at each attempt (signed
 *   by the provider with its keys, `typ: logout+jwt`, with `sub`, `sid`, `events`, a fresh `jti`)
 *   and posts it under the outbound rules the webhooks follow (http/outbound/: no private or
 *   metadata address unless OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS, the address pinned, no
 *   redirects, 10 s). 200 or 204 is done; 400 is the app refusing the token (not retried);
 *   anything else is retried with backoff for a day.
 *
 * The provider's own back-channel sending (on an RP-initiated logout) is replaced by this: the
 * Gatehouse session that logout ends is what sends.
 */
import type { Provider } from 'oidc-provider';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import { createOutboxWorker, type OutboxWorker } from '../storage/outbox/outbox-worker.ts';
import type { OutboxQueue } from '../storage/outbox/outbox.store.ts';
import type { RetryPolicy } from '../storage/outbox/retry-policy.ts';
import { createSender, SEND_TIMEOUT_MS, type Sender } from '../http/outbound/sender.ts';
import { hostOf, type TargetPolicy } from '../http/outbound/target-rules.ts';

export interface OidcLogoutLinksTable {
  session_id: string;
  client_id: string;
  account_id: string;
  sid: string;
  /** The app's grant from this sign-in: it ends with the session. */
  grant_id: string | null;
  created_at: number;
  expires_at: number;
}

export interface OidcLogoutDeliveriesTable {
  id: string;
  client_id: string;
  account_id: string;
  sid: string;
  status: string;
  attempts: number;
  next_attempt_at: number;
  locked_until: number | null;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    oidc_logout_links: OidcLogoutLinksTable;
    oidc_logout_deliveries: OidcLogoutDeliveriesTable;
  }
}

const QUEUE: OutboxQueue<OidcLogoutDeliveriesTable> = { table: 'oidc_logout_deliveries', doneStatus: 'delivered', doneAtColumn: 'delivered_at' };
/** 5 s, 10 s, 20 s … doubling up to 15 min, for a day at most. */
const RETRY: RetryPolicy<OidcLogoutDeliveriesTable> = { firstDelayMs: 5_000, maxDelayMs: 15 * 60_000, jitter: 0.2, maxAttempts: 50, maxAgeMs: 86_400_000, firstAttemptAt: (item) => (item.attempts > 1 ? item.created_at : null) };
const POLL_INTERVAL_MS = 5_000;
const RETENTION_MS = 7 * 86_400_000;
const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export interface BackchannelLogout {
  /** An app was authorized in a browser signed in to Gatehouse with `sessionId`: remember the link, if the app takes logout tokens. */
  link(input: { sessionId: string; clientId: string; accountId: string; sid: string; grantId: string | null }): Promise<void>;
  /** The sessions ended (one, or all of a user's but `keptSessionId`): their links become deliveries, in `db` (the event's transaction). */
  ended(db: Db, ended: { sessionId: string } | { userId: string; keptSessionId?: string }): Promise<number>;
  /** Deletes links whose session can no longer be alive. */
  purgeLinks(batchSize: number): Promise<number>;
  readonly worker: OutboxWorker;
}

export function createBackchannelLogout(deps: {
  db: Db;
  isPostgres: boolean;
  clock: Clock;
  logger: Logger;
  policy: TargetPolicy;
  /** How long a link is kept: as long as the app's grant could live. */
  linkTtlMs: number;
  provider(): Promise<Provider>;
  /** The app's back-channel URI now (null: it has none any more, or is gone). */
  backchannelUri(clientId: string): Promise<string | null>;
  sender?: Sender;
}): BackchannelLogout {
  const { db, clock, logger } = deps;
  const send = deps.sender ?? createSender({ policy: deps.policy, timeoutMs: SEND_TIMEOUT_MS, userAgent: 'Gatehouse-Backchannel-Logout/1.0' });

  /** The logout token for one delivery, made and signed now by the provider (its keys, `typ: logout+jwt`). */
  async function logoutToken(row: OidcLogoutDeliveriesTable): Promise<string | null> {
    const provider = await deps.provider();
    const client = await provider.Client.find(row.client_id);
    if (client === undefined) return null;
    const token = new provider.IdToken({ sub: row.account_id }, { client, ctx: undefined } as never) as unknown as {
      mask: Record<string, null>;
      set(name: string, value: unknown): void;
      issue(options: { use: 'logout' }): Promise<string>;
    };
    token.mask = { sub: null };
    token.set('events', { [BACKCHANNEL_EVENT]: {} });
    token.set('jti', randomId());
    token.set('sid', row.sid);
    return token.issue({ use: 'logout' });
  }

  type Note = { error: string; responseCode: number | null } | null;
  const worker = createOutboxWorker<OidcLogoutDeliveriesTable, Note>({
    db,
    isPostgres: deps.isPostgres,
    queue: QUEUE,
    retry: RETRY,
    clock,
    logger,
    pollIntervalMs: POLL_INTERVAL_MS,
    // Mostly empty: its first look at the table is not at start, beside the mail and webhook workers'.
    firstPollDelayMs: POLL_INTERVAL_MS,
    retentionMs: RETENTION_MS,
    leaseMs: 6 * SEND_TIMEOUT_MS,
    messages: { purged: 'purged old back-channel logout deliveries', storageFailed: 'back-channel logout run failed; will retry', stopping: 'back-channel logout worker stopping' },
    handler: {
      async attempt(row, { signal }) {
        // The person signed in to the app again since (the provider keeps the sid for the browser):
        // a late token must not end that newer sign-in.
        const newer = await db.selectFrom('oidc_logout_links').select('session_id').where('client_id', '=', row.client_id).where('sid', '=', row.sid).where('created_at', '>', row.created_at).executeTakeFirst();
        if (newer !== undefined) return { outcome: 'fail', set: { last_error: 'SUPERSEDED' }, note: null };
        const uri = await deps.backchannelUri(row.client_id);
        if (uri === null) return { outcome: 'fail', set: { last_error: 'NO_BACKCHANNEL_URI' }, note: { error: 'NO_BACKCHANNEL_URI', responseCode: null } };
        const token = await logoutToken(row);
        if (token === null) return { outcome: 'fail', set: { last_error: 'CLIENT_GONE' }, note: { error: 'CLIENT_GONE', responseCode: null } };
        const outcome = await send({ url: uri, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ logout_token: token }).toString(), signal });
        if (outcome.delivered) return { outcome: 'done', set: { last_error: null }, note: null };
        const error = outcome.error ?? `HTTP_${outcome.responseCode}`;
        // 400: the app refused this token (OpenID Back-Channel Logout 1.0 §2.8); sending it again changes nothing.
        return { outcome: outcome.responseCode === 400 ? 'fail' : 'retry', set: { last_error: error.slice(0, 200) }, note: { error, responseCode: outcome.responseCode } };
      },
      async settled(row, { verdict, note }) {
        if (note === null) return;
        const uri = await deps.backchannelUri(row.client_id).catch(() => null);
        const facts = { clientId: row.client_id, host: uri === null ? null : hostOf(uri), attempts: row.attempts, error: note.error, responseCode: note.responseCode };
        if (verdict === 'retried') logger.warn(facts, 'back-channel logout not delivered; will retry');
        else logger.error(facts, 'back-channel logout failed');
      },
    },
  });

  return {
    worker,
    async link({ sessionId, clientId, accountId, sid, grantId }) {
      if ((await deps.backchannelUri(clientId)) === null) return;
      const now = clock();
      const row = { session_id: sessionId, client_id: clientId, account_id: accountId, sid, grant_id: grantId, created_at: now, expires_at: now + deps.linkTtlMs };
      await db
        .insertInto('oidc_logout_links')
        .values(row)
        .onConflict((conflict) => conflict.columns(['session_id', 'client_id']).doUpdateSet({ account_id: accountId, sid, grant_id: grantId, created_at: now, expires_at: row.expires_at }))
        .execute();
    },
    async ended(within, ended) {
      const now = clock();
      let query = within.selectFrom('oidc_logout_links').selectAll().where('expires_at', '>', now);
      if ('sessionId' in ended) query = query.where('session_id', '=', ended.sessionId);
      else {
        query = query.where('account_id', '=', ended.userId);
        if (ended.keptSessionId !== undefined) query = query.where('session_id', '!=', ended.keptSessionId);
      }
      const links = await query.execute();
      if (links.length === 0) return 0;
      await within
        .insertInto('oidc_logout_deliveries')
        .values(links.map((link) => ({ id: randomId(), client_id: link.client_id, account_id: link.account_id, sid: link.sid, status: 'pending', attempts: 0, next_attempt_at: now, locked_until: null, locked_by: null, last_error: null, created_at: now, delivered_at: null })))
        .execute();
      for (const link of links) {
        await within.deleteFrom('oidc_logout_links').where('session_id', '=', link.session_id).where('client_id', '=', link.client_id).execute();
        // The grant from that sign-in ends too: an app that lost the logout token's news (a
        // restart, another instance) loses the session at its next refresh all the same.
        if (link.grant_id !== null) await within.deleteFrom('oidc_payloads').where('grant_id', '=', link.grant_id).execute();
      }
      worker.wakeAfter(within);
      return links.length;
    },
    async purgeLinks(batchSize) {
      const expired = await db.selectFrom('oidc_logout_links').select(['session_id', 'client_id']).where('expires_at', '<=', clock()).limit(batchSize).execute();
      for (const link of expired) await db.deleteFrom('oidc_logout_links').where('session_id', '=', link.session_id).where('client_id', '=', link.client_id).execute();
      return expired.length;
    },
  };
}
