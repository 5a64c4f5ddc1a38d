/**
 * openid-client (and oauth4webapi under it), imported when a sign-in with a provider or an OIDC
 * SSO connection first needs it rather than at start: an instance without providers never runs it.
 * Loaded once per process.
 */
import type * as OpenIdClient from 'openid-client';

let loaded: typeof OpenIdClient | null = null;
let loading: Promise<typeof OpenIdClient> | null = null;

export function loadOpenIdClient(): Promise<typeof OpenIdClient> {
  loading ??= import('openid-client').then((module) => (loaded = module));
  return loading;
}

/** The module once loaded, else null: until then no error can be an instance of its classes. */
export function loadedOpenIdClient(): typeof OpenIdClient | null {
  return loaded;
}
