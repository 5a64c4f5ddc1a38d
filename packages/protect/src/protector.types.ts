/** The types `protect()` and its adapters share (kept apart so that neither imports the other). */
import type { Decision } from './rules.ts';

/** Who a verified token speaks for. */
export interface GatehouseUser {
  userId: string;
  /** The Gatehouse session the token belongs to; null for a token Gatehouse's OpenID Provider issued to an app. */
  sessionId: string | null;
  /** The app (OAuth client) the OpenID Provider issued the token to; null for Gatehouse's own session tokens. */
  clientId: string | null;
  /** What the app was allowed (the token's `scope`); empty for Gatehouse's own session tokens. */
  scopes: string[];
  roles: string[];
  /** How the user proved who they are (RFC 8176 `amr`: `pwd`, `otp`, `hwk`, `mfa`…); empty when the token says nothing. */
  amr: string[];
  /** When they last did (the token's `auth_time`), epoch seconds; null when the token says nothing. */
  authTime: number | null;
  /**
   * The session's active organization (the token's `org` claim): its id, slug and the user's
   * roles in it; null when none is active (or the token says nothing).
   */
  org: { id: string; slug: string; roles: string[] } | null;
  /**
   * The clients acting for the user, outermost first, when the token came from token exchange
   * (RFC 8693 `act`): `['agent']` for an agent's exchange, `['api-b', 'agent']` when API B exchanged
   * again what the agent had got. Empty when the user's own app holds the token.
   */
  actors: string[];
  /** Set when the caller came with a personal API key (`apiKeys` option): the key's id. */
  apiKey?: GatehouseApiKey;
  /** Sign-in mode only (the ID token's claims): the user's e-mail address and name. */
  email?: string;
  name?: string;
}

/**
 * The app a token was issued to by Gatehouse's OpenID Provider (RFC 9068), calling for a user or,
 * with a token of its own (client credentials), for itself.
 */
export interface GatehouseClient {
  /** The OAuth client the token was issued to. */
  clientId: string;
  /** What the app was allowed (the token's `scope`). */
  scopes: string[];
  /** The user the app calls for; null for a machine calling for itself. */
  user: GatehouseUser | null;
  /** Who acted for the user before the token reached this API (`act`, outermost first; `clientId` is the first); empty: nobody. */
  actors: string[];
  /** Set for an organization API key (`apiKeys` option; `clientId` is then `api-key:<id>`): the key and its organization. */
  apiKey?: GatehouseApiKey;
}

/** A Gatehouse API key a request came with, as its introspection described it. */
export interface GatehouseApiKey {
  /** The key's id (not secret: the 12 characters after its prefix). */
  id: string;
  kind: 'personal' | 'organization';
  /** An organization key's organization, with the key's role there; null for a personal key. */
  org: { id: string; slug: string; roles: string[] } | null;
}

/** What a request presents: its Authorization and Cookie headers (null or absent when missing). */
export interface PresentedCredentials {
  authorization?: string | null | undefined;
  cookie?: string | null | undefined;
  /** The `DPoP` header: the proof a key-bound token needs (RFC 9449). */
  dpop?: string | null | undefined;
  /** The request's method, which a DPoP proof names (`htm`). Default GET. */
  method?: string | undefined;
}

export interface Evaluation {
  /** What to send instead of the app's handler: a refusal (401/403, a redirect to sign in), or, with `resourceMetadata`, the metadata document on its path; null: go on. */
  denial: Response | null;
  /** The user behind the request; null without one (no token, or a machine's own token). */
  user: GatehouseUser | null;
  /** The app behind the request, for a token Gatehouse's OpenID Provider issued to one; null otherwise. */
  client: GatehouseClient | null;
  decision: Decision;
}

export interface Protector {
  /** Null when the request may proceed; otherwise the response to send (401/403 JSON, a redirect / 403 for pages, or the resource metadata document). */
  check(request: Request): Promise<Response | null>;
  /** The user behind the request's token, or null (also for a machine's own token); for handlers that need more than the rules. */
  authenticate(request: Request): Promise<GatehouseUser | null>;
  /**
   * `check` and the user in one pass, for adapters that hand the user on to the app. `rawPath` is
   * the request target exactly as the server received it (adapters pass it; Web frameworks that
   * already parsed the URL need not).
   */
  evaluate(request: Request, rawPath?: string): Promise<Evaluation>;
  /**
   * The same from the two headers that matter and the raw request target (query included), for
   * servers that do not hold a Web `Request` (the Node and Fastify adapters).
   */
  evaluateCredentials(credentials: PresentedCredentials, rawPath: string): Promise<Evaluation>;
}
