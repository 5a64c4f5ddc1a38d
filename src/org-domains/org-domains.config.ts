/** The org-domains module's part of the configuration (docs/configuration.md, "Organization domains"). */
import { isIP } from 'node:net';
import type { ConfigSection, RateLimit } from '../config.ts';

export interface OrgDomainsConfig {
  /**
   * DOMAINS_DNS_SERVER: the DNS server verification asks (`host:port`, the host an IP address;
   * `[::1]:53` for IPv6), as `dns.Resolver#setServers` takes it; null: the system's resolver.
   */
  readonly dnsServer: string | null;
  /** DOMAINS_HTTP_CHECK (default true): the well-known file is offered besides the DNS record. */
  readonly httpCheck: boolean;
  /**
   * DOMAINS_ALLOW_PRIVATE_TARGETS (default false): the well-known file may be fetched from a
   * loopback or private address (development); cloud metadata addresses stay refused.
   */
  readonly allowPrivateTargets: boolean;
  /** Plain http for the well-known file: only when NODE_ENV is development or test (with DOMAINS_HTTP_CHECK_PORT). */
  readonly allowHttp: boolean;
  /** DOMAINS_HTTP_CHECK_PORT (development and test only): fetch the file over http on this port, from a local server. */
  readonly httpCheckPort: number | null;
  /** RATE_LIMIT_DOMAIN_VERIFY (default 20/1h): verification attempts per organization. */
  readonly verifyPerOrganization: RateLimit;
  /** How long one lookup (or the file's fetch) may take. */
  readonly timeoutMs: number;
}

declare module '../config.ts' {
  interface Config {
    readonly orgDomains: OrgDomainsConfig;
  }
}

/** `host:port` with an IP host (setServers takes no names): the form setServers takes, or null. */
export function parseDnsServer(value: string): string | null {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+))(?::(\d{1,5}))?$/.exec(value);
  if (match === null) return null;
  const host = match[1] ?? match[2]!;
  const port = match[3] === undefined ? 53 : Number(match[3]);
  if (isIP(host) === 0 || port < 1 || port > 65_535) return null;
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

export const orgDomainsConfigSection: ConfigSection = (read, { env }, problems) => {
  const rawServer = read.string('DOMAINS_DNS_SERVER');
  const dnsServer = rawServer === undefined ? null : parseDnsServer(rawServer);
  if (rawServer !== undefined && dnsServer === null) problems.push(`DOMAINS_DNS_SERVER must be an IP address and port such as 10.0.0.53:53 or [fd00::53]:53 (got "${rawServer}")`);
  const allowHttp = env === 'development' || env === 'test';
  const rawPort = read.string('DOMAINS_HTTP_CHECK_PORT');
  let httpCheckPort: number | null = null;
  if (rawPort !== undefined) {
    if (!allowHttp) problems.push('DOMAINS_HTTP_CHECK_PORT is for development and tests only (NODE_ENV=development or test)');
    else httpCheckPort = read.integer('DOMAINS_HTTP_CHECK_PORT', 0, { min: 1, max: 65_535 });
  }
  return {
    orgDomains: {
      dnsServer,
      httpCheck: read.boolean('DOMAINS_HTTP_CHECK', true),
      allowPrivateTargets: read.boolean('DOMAINS_ALLOW_PRIVATE_TARGETS', false),
      allowHttp,
      httpCheckPort: httpCheckPort === 0 ? null : httpCheckPort,
      verifyPerOrganization: read.rateLimit('RATE_LIMIT_DOMAIN_VERIFY', { points: 20, durationSeconds: 3_600 }),
      timeoutMs: 5_000,
    },
  };
};
