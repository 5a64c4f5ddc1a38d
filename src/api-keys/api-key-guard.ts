/**
 * What a request made with an API key may do, beyond its roles (a hook on every route, registered at
 * the top level like the impersonation module's): it counts against the key's rate limit (429
 * RATE_LIMITED with Retry-After over it), reaches API paths only (pages and their forms are for
 * people in a browser), and never a route that asks for a step-up (`RECENT_SECOND_FACTOR` or
 * `RECENT_SIGN_IN`: passwords, second factors, passkeys, linked providers, deleting the account,
 * administrators' changes): 403 API_KEY_NOT_ALLOWED. A key without the `write` scope reads only:
 * any other method than GET, HEAD and OPTIONS is 403 API_KEY_SCOPE_REQUIRED. Its last use (time, address) is written at
 * most once a minute. The key-management routes refuse keys themselves (keys cannot make keys).
 */
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { syncFirstHook } from '../http/sync-first-hook.ts';
import { thenNow } from '../lib/then-now.ts';
import type { Wait } from '../http/rate-limit.ts';
import { AppError } from '../errors.ts';
import { RECENT_SECOND_FACTOR, RECENT_SIGN_IN } from '../authorization/access.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import { isApiRequestPath, readRequestPath } from '../../packages/protect/src/rules.ts';
import { API_KEY_AMR, KEY_SESSION_PREFIX, WRITE_SCOPE } from './api-keys.model.ts';
import type { ApiKeyUse, SyncFirstKeyUse } from './api-key-use.ts';

const STEP_UP = new Set([RECENT_SECOND_FACTOR, RECENT_SIGN_IN]);
const READING = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The id of the key a caller authenticated with, or null for a session (cookie or access token). */
export function keyIdOf(auth: RequestAuth | null | undefined): string | null {
  if (auth === null || auth === undefined || auth.via !== 'bearer' || !auth.amr.includes(API_KEY_AMR) || !auth.sessionId.startsWith(KEY_SESSION_PREFIX)) return null;
  return auth.sessionId.slice(KEY_SESSION_PREFIX.length);
}

const asksForStepUp = (request: FastifyRequest) => request.routeOptions.config?.access?.requires.some((name) => STEP_UP.has(name)) ?? false;

export function guardKeyRequests(app: FastifyInstance, use: ApiKeyUse): void {
  /**
   * The key uses that answer at once (`SyncFirstKeyUse`), once asked for: `use` is the registry's
   * stand-in, whose methods always answer with a promise (lib/deferred-service.ts), and most
   * requests made with a key need none. Resolving the request's key has loaded them by then, so
   * asking costs a turn of the queue at the first such request only.
   */
  let kept: SyncFirstKeyUse | undefined;

  // Most requests carry no key: decided without a promise (http/sync-first-hook.ts).
  app.addHook(
    'preHandler',
    syncFirstHook((request) => {
      const keyId = keyIdOf(request.gatehouseAuth);
      if (keyId === null) return undefined;
      if (kept !== undefined) return guardKeyRequest(kept, request, keyId);
      return use.syncFirst().then((asked) => guardKeyRequest((kept = asked), request, keyId));
    }) as unknown as preHandlerHookHandler,
  );

  /**
   * The guard for a request made with a key: undefined when it passes at once (the key's lease has
   * points, its scopes are known and no last use is due to be written: most uses), else the promise
   * of the rest, rejected with the refusal.
   */
  function guardKeyRequest(uses: SyncFirstKeyUse, request: FastifyRequest, keyId: string): Promise<unknown> | undefined {
    return thenNow(uses.consume({ id: keyId, userId: request.gatehouseAuth!.userId }), (wait) => afterCount(uses, request, keyId, wait));
  }

  function afterCount(uses: SyncFirstKeyUse, request: FastifyRequest, keyId: string, wait: Wait): Promise<unknown> | undefined {
    if (wait !== null) return Promise.reject(new AppError('RATE_LIMITED', { retryAfterSeconds: wait }));
    if (!isApiRequestPath(readRequestPath(request.url)) || asksForStepUp(request)) return refuse(request, keyId, 'NOT_ALLOWED', 'API_KEY_NOT_ALLOWED');
    if (READING.has(request.method)) return uses.accept(keyId, request.ip, 'api');
    return thenNow(uses.scopesOf(keyId), (scopes) => afterScopes(uses, request, keyId, scopes));
  }

  function afterScopes(uses: SyncFirstKeyUse, request: FastifyRequest, keyId: string, scopes: readonly string[]): Promise<void> | undefined {
    if (!scopes.includes(WRITE_SCOPE)) return refuse(request, keyId, 'SCOPE_REQUIRED', 'API_KEY_SCOPE_REQUIRED');
    return uses.accept(keyId, request.ip, 'api');
  }

  async function refuse(request: FastifyRequest, keyId: string, reason: 'NOT_ALLOWED' | 'SCOPE_REQUIRED', code: 'API_KEY_NOT_ALLOWED' | 'API_KEY_SCOPE_REQUIRED'): Promise<never> {
    await use.failed({ id: keyId, user_id: request.gatehouseAuth!.userId, kind: 'personal', organization_id: null }, reason, request.ip);
    throw new AppError(code);
  }
}
