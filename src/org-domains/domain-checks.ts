/**
 * How a domain proves it: the records to publish and the lookups that find them.
 *
 * - DNS (always offered): a TXT record at `_gatehouse-challenge.<domain>` whose value is exactly
 *   `gatehouse-domain-verification=<token>`, asked of the system's resolver, or of the server
 *   DOMAINS_DNS_SERVER names.
 * - HTTP (unless DOMAINS_HTTP_CHECK=false): `https://<domain>/.well-known/gatehouse-domain-verification`
 *   whose body holds that same line, fetched under the outbound rules webhooks follow
 *   (http/outbound/: public addresses only, no redirect followed, 64 KiB at most); its host is
 *   resolved through the same DNS server.
 * Outcomes are values: the check never throws for what the domain's owner got wrong.
 */
import { Resolver } from 'node:dns/promises';
import { createDocumentFetch } from '../http/outbound/fetcher.ts';
import { systemResolver, type Resolver as AddressResolver } from '../http/outbound/sender.ts';
import type { OrgDomainsConfig } from './org-domains.config.ts';
import { CHALLENGE_LABEL, CHALLENGE_PREFIX, WELL_KNOWN_PATH, type VerificationMethod } from './domain-challenge.ts';

// The record and file to publish, and the methods, are declared apart (read at start by the routes).
export { CHALLENGE_LABEL, CHALLENGE_PREFIX, WELL_KNOWN_PATH, METHODS, challengeOf, type VerificationMethod, type Challenge } from './domain-challenge.ts';

export type CheckFailure = 'DOMAIN_RECORD_NOT_FOUND' | 'DOMAIN_RECORD_MISMATCH' | 'DOMAIN_CHECK_FAILED';
export type CheckOutcome = { ok: true } | { ok: false; reason: CheckFailure };

export interface DomainChecker {
  check(method: VerificationMethod, domain: string, token: string): Promise<CheckOutcome>;
}

const NOT_FOUND_CODES: ReadonlySet<string> = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

function resolverFor(config: OrgDomainsConfig): Resolver {
  const resolver = new Resolver({ timeout: config.timeoutMs, tries: 2 });
  if (config.dnsServer !== null) resolver.setServers([config.dnsServer]);
  return resolver;
}

/** The host's addresses, from the named DNS server when there is one (the pinned lookup checks each). */
function addressResolver(config: OrgDomainsConfig, resolver: Resolver): AddressResolver {
  if (config.dnsServer === null) return systemResolver;
  return async (hostname) => {
    const settle = (lookup: Promise<string[]>) => lookup.catch(() => [] as string[]);
    const [v4, v6] = await Promise.all([settle(resolver.resolve4(hostname)), settle(resolver.resolve6(hostname))]);
    return [...v4.map((address) => ({ address, family: 4 })), ...v6.map((address) => ({ address, family: 6 }))];
  };
}

export function createDomainChecker(config: OrgDomainsConfig): DomainChecker {
  const resolver = resolverFor(config);
  const fetchDocument = createDocumentFetch({
    policy: { allowHttp: config.allowHttp, allowPrivate: config.allowPrivateTargets, allowPrivateSetting: 'DOMAINS_ALLOW_PRIVATE_TARGETS' },
    timeoutMs: config.timeoutMs,
    maxBytes: 65_536,
    resolve: addressResolver(config, resolver),
  });

  async function checkDns(domain: string, expected: string): Promise<CheckOutcome> {
    let records: string[][];
    try {
      records = await resolver.resolveTxt(`${CHALLENGE_LABEL}.${domain}`);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      return { ok: false, reason: NOT_FOUND_CODES.has(code) ? 'DOMAIN_RECORD_NOT_FOUND' : 'DOMAIN_CHECK_FAILED' };
    }
    // A TXT value longer than 255 bytes comes in several strings: they are one value.
    const values = records.map((chunks) => chunks.join(''));
    if (values.length === 0) return { ok: false, reason: 'DOMAIN_RECORD_NOT_FOUND' };
    return values.some((value) => value.trim() === expected) ? { ok: true } : { ok: false, reason: 'DOMAIN_RECORD_MISMATCH' };
  }

  async function checkHttp(domain: string, expected: string): Promise<CheckOutcome> {
    const url = config.httpCheckPort === null ? `https://${domain}${WELL_KNOWN_PATH}` : `http://${domain}:${config.httpCheckPort}${WELL_KNOWN_PATH}`;
    let response: Response;
    try {
      response = await fetchDocument(url, { headers: { accept: 'text/plain' } });
    } catch {
      return { ok: false, reason: 'DOMAIN_CHECK_FAILED' };
    }
    if (response.status === 404 || response.status === 410) return { ok: false, reason: 'DOMAIN_RECORD_NOT_FOUND' };
    if (response.status !== 200) return { ok: false, reason: 'DOMAIN_CHECK_FAILED' };
    let body: string;
    try {
      body = await response.text();
    } catch {
      return { ok: false, reason: 'DOMAIN_CHECK_FAILED' };
    }
    return body.split(/\r?\n/).some((line) => line.trim() === expected) ? { ok: true } : { ok: false, reason: 'DOMAIN_RECORD_MISMATCH' };
  }

  return {
    check(method, domain, token) {
      const expected = `${CHALLENGE_PREFIX}${token}`;
      return method === 'dns' ? checkDns(domain, expected) : checkHttp(domain, expected);
    },
  };
}
