/** Sign-in mode's options and answers (sign-in.ts), apart so that the types read on their own. */
import type { ProtectionRules } from './rules.ts';
import type { GatehouseUser } from './protector.types.ts';
import type { SignInStore } from './sign-in-logout.ts';

export type { SignInStore } from './sign-in-logout.ts';

export interface SignInPaths {
  /** Starts a sign-in (`?returnTo=/a/path`). Default `/auth/signin`. */
  signIn: string;
  /** The redirect URI registered with Gatehouse is `appUrl` + this. Default `/auth/callback`. */
  callback: string;
  /** `POST` here (a form on this app's pages) signs out. Default `/auth/signout`. */
  signOut: string;
  /** Register `appUrl` + this as the client's `backchannel_logout_uri`. Default `/auth/backchannel-logout`. */
  backchannelLogout: string;
}

export interface SignInOptions {
  /** Gatehouse's public URL (its AUTH_URL): the OpenID Provider's issuer. https, or http on a loopback host for development. */
  issuer: string;
  /** The app's client at Gatehouse (`gatehouse clients create … --json` prints it). */
  clientId: string;
  /** The client's secret (a confidential client: what a server app should be). Without it, a public client (PKCE only). */
  clientSecret?: string;
  /** This app's public origin, e.g. `https://app.example.com`: its redirect URIs are made from it. */
  appUrl: string;
  /** Seals the session cookie: 32 characters or more. Several: the first seals, every one opens (rotation). */
  secret: string | readonly string[];
  /** Default `SEED_RULES`. */
  rules?: ProtectionRules;
  /** Default `openid email profile roles offline_access` (a refresh token keeps the session's roles current). */
  scope?: string;
  paths?: Partial<SignInPaths>;
  /** Where the browser lands after signing out (a path of this app; register `appUrl` + it as a post-logout redirect URI). Default `/`. */
  postLogoutPath?: string;
  /** How long a session lasts at most, seconds. Default 7 days; it ends sooner when Gatehouse ends the grant. */
  sessionMaxAgeSeconds?: number;
  /** Default: this process's memory. */
  store?: SignInStore;
  /** For tests and special transports. */
  fetch?: typeof fetch;
}

export interface SignInResult {
  /** What to send instead of running the app's handler (a redirect, a refusal, the callback's answer); null: go on. */
  response: Response | null;
  /** The signed-in user, or null. */
  user: GatehouseUser | null;
  /** The session's access token for calling APIs as the user (Gatehouse's userinfo, say); null without a session. */
  accessToken: string | null;
  /** Set-Cookie headers to add to whatever is sent (the response above, or the app's). */
  setCookie: string[];
}

export interface SignIn {
  readonly paths: Readonly<SignInPaths>;
  /** Handles the request: the sign-in paths answer; any other path gets the session and the rules' decision. `rawPath`: the request target as received (adapters pass it). */
  handle(request: Request, rawPath?: string): Promise<SignInResult>;
  /**
   * The user of a request's session cookie (a `Request`, or its Cookie header), or null; it
   * refreshes nothing and sets no cookie. For code that reads the user where the middleware cannot
   * hand it on (a Next.js server component: `authenticate((await cookies()).toString())`).
   */
  authenticate(request: Request | string | null): Promise<GatehouseUser | null>;
}

