/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for an API or MCP server that token mode guards:
 * the document at `/.well-known/oauth-protected-resource` (the resource's path appended, §3.1),
 * naming Gatehouse as the authorization server, and the `resource_metadata` parameter of every
 * `WWW-Authenticate` challenge (§5.1), so that a client knowing only the resource's URL (an MCP
 * client) finds Gatehouse from it.
 */
import type { ProtectionRules } from './rules.ts';

export interface ResourceMetadataOptions {
  /** The resource identifier: the URL clients call and ask tokens for. Default: `audience`, when it is one URL. */
  resource?: string;
  /** `scopes_supported`. Default: every scope the rules' `scopeRequirements` name. */
  scopes?: readonly string[];
  /** `resource_name`: a name people read (an MCP client may show it). */
  name?: string;
  /** `resource_documentation`: a page for developers. */
  documentation?: string;
}

export interface ResourceMetadata {
  /** The absolute URL of the document: the `resource_metadata` of challenges. */
  readonly url: string;
  /** The request paths that answer with it: the path-inserted well-known URI, and the bare one for clients that try it. */
  readonly paths: ReadonlySet<string>;
  /** The document, answered to any method on those paths (it is public: any origin may read it). */
  response(): Response;
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]';
}

export function createResourceMetadata(options: ResourceMetadataOptions | true, context: { issuer: string; audience: string | readonly string[]; rules: ProtectionRules }): ResourceMetadata {
  const settings: ResourceMetadataOptions = options === true ? {} : options;
  const resource = settings.resource ?? (typeof context.audience === 'string' && context.audience !== context.issuer ? context.audience : undefined);
  if (resource === undefined) throw new TypeError('gatehouse-protect: resourceMetadata needs `resource` (or one `audience` URL that is not the issuer)');
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    throw new TypeError(`gatehouse-protect: resourceMetadata.resource is not a URL: ${resource}`);
  }
  if (!(url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))) || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new TypeError('gatehouse-protect: resourceMetadata.resource must be an https URL (http on a loopback host) without query, fragment or credentials');
  }
  const resourcePath = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const path = `${WELL_KNOWN}${resourcePath}`;
  const scopes = settings.scopes ?? [...new Set((context.rules.scopeRequirements ?? []).flatMap((rule) => rule.scopes))];
  const body = JSON.stringify({
    // The identifier exactly as the API is configured (and as Gatehouse's OIDC_PROVIDER_RESOURCES lists it).
    resource,
    authorization_servers: [context.issuer],
    ...(scopes.length > 0 && { scopes_supported: scopes }),
    bearer_methods_supported: ['header'],
    ...(settings.name !== undefined && { resource_name: settings.name }),
    ...(settings.documentation !== undefined && { resource_documentation: settings.documentation }),
  });
  return {
    url: `${url.origin}${path}`,
    paths: new Set([path, WELL_KNOWN]),
    response: () =>
      new Response(body, {
        status: 200,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'public, max-age=3600', 'access-control-allow-origin': '*' },
      }),
  };
}

/** A challenge with the metadata's URL added (RFC 9728 §5.1); the challenge as it was without metadata. */
export function withResourceMetadata(challenge: string, metadata: ResourceMetadata | null): string {
  if (metadata === null) return challenge;
  return challenge === 'Bearer' ? `Bearer resource_metadata="${metadata.url}"` : `${challenge}, resource_metadata="${metadata.url}"`;
}
