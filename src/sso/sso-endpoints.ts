/**
 * A connection's addresses at Gatehouse, to paste at the IdP: the SAML SP's entity ID, ACS URL and
 * metadata URL, and the OIDC redirect URI. Declarations only (no SAML or OIDC library), so the
 * routes and pages that show them load at start without the service (saml-sp.ts, oidc-rp.ts),
 * which loads at its first call.
 */

export interface SamlEndpoints {
  entityId: string;
  acsUrl: string;
  metadataUrl: string;
}

export function samlEndpoints(authUrl: string, connectionId: string): SamlEndpoints {
  const base = `${authUrl}/sso/saml/${connectionId}`;
  return { entityId: `${base}/metadata`, acsUrl: `${base}/acs`, metadataUrl: `${base}/metadata` };
}

export function oidcRedirectUri(authUrl: string, connectionId: string): string {
  return `${authUrl}/sso/oidc/${connectionId}/callback`;
}
