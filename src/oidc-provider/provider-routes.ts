/**
 * Where the OpenID Provider answers, and what its scopes release: read by the routes that bridge
 * to it at start, without loading oidc-provider itself (provider.ts, loaded on first use).
 */

/** Where the provider's endpoints live (under the issuer, AUTH_URL). */
export const OIDC_ROUTES = {
  authorization: '/oidc/auth',
  token: '/oidc/token',
  userinfo: '/oidc/userinfo',
  jwks: '/.well-known/jwks.json',
  end_session: '/oidc/session/end',
  introspection: '/oidc/token/introspection',
  revocation: '/oidc/token/revocation',
  device_authorization: '/oidc/device/auth',
  code_verification: '/device',
  pushed_authorization_request: '/oidc/par',
  registration: '/oidc/reg',
  backchannel_authentication: '/oidc/backchannel',
  challenge: '/oidc/challenge',
  credential: '/oidc/credential',
} as const;

export const INTERACTION_PATH = '/oidc/interaction';

/** Scopes a user can grant, and the claims each releases. */
export const OIDC_CLAIMS = {
  // When and how the user signed in go into every ID token (oidc-provider adds them only on request otherwise).
  openid: ['sub', 'auth_time', 'amr'],
  profile: ['name', 'updated_at'],
  email: ['email', 'email_verified'],
  roles: ['roles'],
} as const;
