/**
 * What comes with a user besides the password: linked provider identities, matched to the
 * providers configured here by their name in the source system or their issuer, and TOTP secrets,
 * stored sealed as the mfa module seals its own (mfa/secret-box.ts, under the same derived key).
 */
import { Secret } from 'otpauth';
import type { OAuthProviderConfig } from '../oauth/oauth.config.ts';

export interface ForeignIdentity {
  /** The source's name for the provider (`github`, `google-oauth2`, `google.com`…) or its issuer URL. */
  provider: string;
  /** The provider's id of the person (`sub`; GitHub's numeric id). */
  subject: string;
}

export interface LinkedIdentity {
  provider: string;
  subject: string;
}

const ALIASES: Record<string, string> = {
  github: 'github',
  'github.com': 'github',
  google: 'google',
  'google-oauth2': 'google',
  'google.com': 'google',
  'https://accounts.google.com': 'google',
};

const trimSlash = (url: string) => url.replace(/\/+$/, '');

/** Maps a source identity to a configured provider's id, or null when none matches. */
export function identityMatcher(providers: readonly OAuthProviderConfig[]): (identity: ForeignIdentity) => string | null {
  const configured = new Set<string>(providers.map((provider) => provider.id));
  const byIssuer = new Map(providers.flatMap((provider) => (provider.kind === 'oidc' ? [[trimSlash(provider.issuer), provider.id] as const] : [])));
  return (identity) => {
    const id = byIssuer.get(trimSlash(identity.provider)) ?? ALIASES[identity.provider.toLowerCase()] ?? identity.provider;
    return configured.has(id) ? id : null;
  };
}

/** The identities of an entry that look like identities (a provider and a subject, both strings). */
export function toForeignIdentities(value: unknown, read: (item: Record<string, unknown>) => { provider: unknown; subject: unknown }): ForeignIdentity[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    if (typeof item !== 'object' || item === null) return [];
    const { provider, subject } = read(item as Record<string, unknown>);
    const id = typeof subject === 'number' ? String(subject) : subject;
    return typeof provider === 'string' && typeof id === 'string' && provider !== '' && id !== '' && id.length <= 255 ? [{ provider, subject: id }] : [];
  });
}

/**
 * A TOTP secret as base32 (RFC 4648, what authenticator apps take) of 160 bits, the size
 * Gatehouse's TOTP uses (mfa/totp.ts) and Keycloak's and Clerk's defaults; null when it is not one.
 */
export function toTotpSecret(value: string): string | null {
  const base32 = value.replace(/[\s=]/g, '').toUpperCase();
  if (!/^[A-Z2-7]{32}$/.test(base32)) return null;
  return base32;
}

/** Keycloak keeps the secret's characters themselves; the app was given their bytes in base32. */
export function keycloakTotpSecret(value: string): string {
  return new Secret({ buffer: new Uint8Array(Buffer.from(value, 'utf8')).buffer }).base32;
}
