/** The providers section of the configuration: GitHub, Google and a generic OpenID Connect provider. */
import { EnvReader, hasExtraUrlParts, isLoopbackHost, toBaseUrl } from '../config/env-reader.ts';
import type { ConfigSection } from '../config.ts';

declare module '../config.ts' {
  interface Config {
    readonly oauth: {
      /** In the order they are shown on the sign-in page. */
      readonly providers: readonly OAuthProviderConfig[];
    };
  }
}

/** The oauth module's section: the providers that are on. */
export const oauthConfigSection: ConfigSection = (read, _basis, problems) => ({ oauth: { providers: parseOAuthProviders(read, problems) } });

/**
 * An OAuth / OpenID Connect provider, enabled by its client id and secret. `github` speaks plain
 * OAuth 2.0 and reads the profile from GitHub's REST API; `oidc` providers are found by discovery
 * and prove the user with an ID token.
 */
export type OAuthProviderConfig =
  | {
      readonly id: 'github';
      readonly kind: 'github';
      readonly name: string;
      readonly clientId: string;
      /** Never log it. */
      readonly clientSecret: string;
      /** GitHub, or GitHub Enterprise Server: `${url}/login/oauth/authorize` and `/login/oauth/access_token`. */
      readonly url: string;
      /** The REST API root: `${apiUrl}/user` and `/user/emails`. */
      readonly apiUrl: string;
    }
  | {
      readonly id: 'google' | 'oidc';
      readonly kind: 'oidc';
      readonly name: string;
      readonly clientId: string;
      /** Never log it. */
      readonly clientSecret: string;
      /** The issuer identifier; its `/.well-known/openid-configuration` is fetched on first use. */
      readonly issuer: string;
    };

/**
 * The providers' display names, by id: what the sign-in page's buttons say (the generic provider's
 * unless OIDC_NAME names it). Also how a page names a provider no longer configured that past
 * sign-ins went through (the admin overview's sign-ins by method).
 */
export const PROVIDER_NAMES: Readonly<Record<OAuthProviderConfig['id'], string>> = { github: 'GitHub', google: 'Google', oidc: 'OpenID Connect' };

/**
 * GitHub (provider A), Google (provider B) and one generic OpenID Connect provider. Each is on
 * when its client id and secret are both set; the seed's PROVIDER_A_* / PROVIDER_B_* names are
 * accepted for the first two. Provider endpoints must be https, except on a loopback host (a
 * provider run beside Gatehouse, or a test double): tokens and secrets never cross a network in clear.
 */
export function parseOAuthProviders(read: EnvReader, problems: string[]): OAuthProviderConfig[] {
  const providers: OAuthProviderConfig[] = [];
  const credentials = (prefix: string, alias?: string) => {
    const pick = (suffix: string, raw: boolean) => {
      const primary = raw ? read.raw(`${prefix}_${suffix}`) : read.string(`${prefix}_${suffix}`);
      if (primary !== undefined || alias === undefined) return primary;
      return raw ? read.raw(`${alias}_${suffix}`) : read.string(`${alias}_${suffix}`);
    };
    const clientId = pick('CLIENT_ID', false);
    const clientSecret = pick('CLIENT_SECRET', true);
    const names = alias === undefined ? `${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET` : `${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET (or ${alias}_*)`;
    if ((clientId === undefined) !== (clientSecret === undefined)) problems.push(`${names} must be set together`);
    return clientId !== undefined && clientSecret !== undefined ? { clientId, clientSecret } : null;
  };
  const endpoint = (name: string, fallback: string) => parseProviderUrl(name, read.string(name) ?? fallback, problems);

  const github = credentials('GITHUB', 'PROVIDER_A');
  const githubUrl = endpoint('GITHUB_URL', 'https://github.com');
  const githubApiUrl = endpoint('GITHUB_API_URL', 'https://api.github.com');
  if (github !== null && githubUrl !== undefined && githubApiUrl !== undefined) {
    providers.push({ id: 'github', kind: 'github', name: PROVIDER_NAMES.github, ...github, url: githubUrl, apiUrl: githubApiUrl });
  }

  const google = credentials('GOOGLE', 'PROVIDER_B');
  const googleIssuer = endpoint('GOOGLE_ISSUER', 'https://accounts.google.com');
  if (google !== null && googleIssuer !== undefined) {
    providers.push({ id: 'google', kind: 'oidc', name: PROVIDER_NAMES.google, ...google, issuer: googleIssuer });
  }

  const oidc = credentials('OIDC');
  const oidcIssuerValue = read.string('OIDC_ISSUER');
  const oidcName = read.string('OIDC_NAME') ?? PROVIDER_NAMES.oidc;
  if (oidcName.length > 64 || /[\u0000-\u001f\u007f]/.test(oidcName)) problems.push('OIDC_NAME must be at most 64 characters, without control characters');
  if (oidc !== null && oidcIssuerValue === undefined) problems.push('OIDC_ISSUER is required when OIDC_CLIENT_ID is set');
  if (oidc === null && oidcIssuerValue !== undefined) problems.push('OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are required when OIDC_ISSUER is set');
  const oidcIssuer = oidcIssuerValue === undefined ? undefined : parseProviderUrl('OIDC_ISSUER', oidcIssuerValue, problems);
  if (oidc !== null && oidcIssuer !== undefined) {
    providers.push({ id: 'oidc', kind: 'oidc', name: oidcName, ...oidc, issuer: oidcIssuer });
  }
  return providers;
}

/**
 * A provider endpoint. Problems never quote the value: a mistyped URL may carry credentials
 * (`https://user:secret@…`), and the message is printed at start-up.
 */
export function parseProviderUrl(name: string, value: string, problems: string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${name} must be an absolute https URL`);
    return undefined;
  }
  const isAllowedHttp = url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !isAllowedHttp) {
    problems.push(`${name} must be https (http only for a loopback host) (got ${url.protocol}//${url.host})`);
    return undefined;
  }
  if (hasExtraUrlParts(url)) {
    problems.push(`${name} must not contain credentials, a query or a fragment`);
    return undefined;
  }
  return toBaseUrl(url);
}
