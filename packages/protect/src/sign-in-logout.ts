/**
 * Sign-in mode's record of ended sessions (sign-in.ts): what a sign-out at the app and Gatehouse's
 * back-channel logout tokens (OpenID Back-Channel Logout 1.0) ended, kept in the app's `store`.
 * A logout token is verified against Gatehouse's keys (`typ: logout+jwt`, the app as audience,
 * `iat`, `exp`, `jti`, the back-channel event, no `nonce`), each accepted once; it ends the sessions
 * it names (by `sid`, else every one of its `sub`) that began before it was made. A token that does
 * not verify is answered 400; keys that cannot be had right now 503, which Gatehouse sends again.
 */
import { jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';

/** Where sign-in mode keeps what several instances of the app must share: ended sessions and used logout tokens. */
export interface SignInStore {
  get(key: string): Promise<string | undefined> | string | undefined;
  /** Keeps `value` for `ttlSeconds`. */
  set(key: string, value: string, ttlSeconds: number): Promise<void> | void;
}

/** What of a session the record goes by: its user, Gatehouse's `sid` for it, and when it began (epoch seconds). */
export interface RecordedSession {
  readonly sub: string;
  readonly sid?: string;
  readonly since: number;
}

const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const MAX_BODY_CHARACTERS = 16_384;

export interface LogoutRecord {
  /** Whether a sign-out or a logout token ended this session. */
  isEnded(session: RecordedSession): Promise<boolean>;
  /** The app's own sign-out: a copy of the cookie is refused from now on. */
  recordSignOut(session: RecordedSession): Promise<void>;
  /** `POST` of a logout token: 200 once recorded, 400 for a token that does not verify, 503 when Gatehouse's keys cannot be had. */
  receiveLogoutToken(request: Request): Promise<Response>;
}

export function createLogoutRecord(deps: {
  store: SignInStore;
  /** How long an ending is remembered: as long as a session can last. */
  rememberSeconds: number;
  clientId: string;
  /** Gatehouse's keys and issuer (discovered; throws while Gatehouse cannot be reached). */
  verification(): Promise<{ keys: JWTVerifyGetKey; issuer: string }>;
}): LogoutRecord {
  const { store, rememberSeconds } = deps;
  const now = () => Math.floor(Date.now() / 1000);
  const keyOf = (session: RecordedSession) => (session.sid === undefined ? `logout:session:${session.sub}:${session.since}` : `logout:sid:${session.sid}`);
  const answer = (status: number, error?: string) =>
    new Response(error === undefined ? null : JSON.stringify({ error }), { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } });

  async function verified(logoutToken: string): Promise<JWTPayload | 'invalid' | 'unavailable'> {
    let verification: { keys: JWTVerifyGetKey; issuer: string };
    try {
      verification = await deps.verification();
    } catch {
      // Gatehouse unreachable from here: not the token's fault, so not a 400 (which Gatehouse does not send again).
      return 'unavailable';
    }
    try {
      const { payload } = await jwtVerify(logoutToken, verification.keys, {
        issuer: verification.issuer,
        audience: deps.clientId,
        typ: 'logout+jwt',
        algorithms: ['EdDSA', 'RS256'],
        requiredClaims: ['iat', 'exp', 'jti'],
        maxTokenAge: '5 minutes',
        clockTolerance: 5,
      });
      return payload;
    } catch (error) {
      // Keys that could not be fetched (or a new key in the refetch cooldown) may work in a moment.
      const code = (error as { code?: string }).code;
      return code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JWKS_NO_MATCHING_KEY' || code === 'ERR_JOSE_GENERIC' ? 'unavailable' : 'invalid';
    }
  }

  return {
    async isEnded(session) {
      for (const key of [`logout:sub:${session.sub}`, keyOf(session)]) {
        const at = await store.get(key);
        if (at !== undefined && Number(at) >= session.since) return true;
      }
      return false;
    },
    async recordSignOut(session) {
      await store.set(keyOf(session), String(now()), rememberSeconds);
    },
    async receiveLogoutToken(request) {
      const type = request.headers.get('content-type') ?? '';
      if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded')) return answer(400, 'invalid_request');
      const body = await request.text();
      if (body.length > MAX_BODY_CHARACTERS) return answer(400, 'invalid_request');
      const logoutToken = new URLSearchParams(body).get('logout_token');
      if (logoutToken === null) return answer(400, 'invalid_request');
      const claims = await verified(logoutToken);
      if (claims === 'unavailable') return answer(503, 'temporarily_unavailable');
      if (claims === 'invalid') return answer(400, 'invalid_request');
      const events = claims.events as Record<string, unknown> | undefined;
      const isLogout = typeof events === 'object' && events !== null && typeof events[BACKCHANNEL_EVENT] === 'object';
      const sid = typeof claims.sid === 'string' ? claims.sid : undefined;
      const sub = typeof claims.sub === 'string' ? claims.sub : undefined;
      if (!isLogout || 'nonce' in claims || (sid === undefined && sub === undefined)) return answer(400, 'invalid_request');
      const jtiKey = `logout:jti:${claims.jti}`;
      if ((await store.get(jtiKey)) !== undefined) return answer(400, 'invalid_request');
      await store.set(jtiKey, '1', 600);
      // Sessions begun before the token was made end; one begun since (a sign-in again) does not.
      const at = String(Math.min(now(), Number(claims.iat)));
      await store.set(sid !== undefined ? `logout:sid:${sid}` : `logout:sub:${sub}`, at, rememberSeconds);
      return answer(200);
    },
  };
}

/** The default store: this process's memory, bounded, entries dropped when they expire. */
export function memoryStore(): SignInStore {
  const entries = new Map<string, { value: string; until: number }>();
  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.until <= Date.now()) {
        entries.delete(key);
        return undefined;
      }
      return entry.value;
    },
    set(key, value, ttlSeconds) {
      if (entries.size >= 100_000) {
        for (const [name, entry] of entries) if (entry.until <= Date.now()) entries.delete(name);
        if (entries.size >= 100_000) entries.delete(entries.keys().next().value!);
      }
      entries.set(key, { value, until: Date.now() + ttlSeconds * 1000 });
    },
  };
}
