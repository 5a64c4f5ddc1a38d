/**
 * What a domain's owner publishes to prove it (the TXT record, the well-known file) and the methods
 * that look for it: declarations only, no lookups. The routes and the model read them at start;
 * the checks themselves (domain-checks.ts) load with the service, at its first call.
 */
import type { OrgDomainsConfig } from './org-domains.config.ts';

export const CHALLENGE_LABEL = '_gatehouse-challenge';
export const CHALLENGE_PREFIX = 'gatehouse-domain-verification=';
export const WELL_KNOWN_PATH = '/.well-known/gatehouse-domain-verification';
export const METHODS = ['dns', 'http'] as const;
export type VerificationMethod = (typeof METHODS)[number];

/** What the organization publishes to prove `domain` with `token`. */
export interface Challenge {
  /** The TXT record's name (`_gatehouse-challenge.example.com`). */
  readonly recordName: string;
  readonly recordType: 'TXT';
  /** Its value, exactly (`gatehouse-domain-verification=…`). */
  readonly recordValue: string;
  /** The well-known file's URL and body, when that method is offered; null otherwise. */
  readonly fileUrl: string | null;
  readonly fileContent: string;
}

export function challengeOf(domain: string, token: string, config: Pick<OrgDomainsConfig, 'httpCheck'>): Challenge {
  const recordValue = `${CHALLENGE_PREFIX}${token}`;
  return { recordName: `${CHALLENGE_LABEL}.${domain}`, recordType: 'TXT', recordValue, fileUrl: config.httpCheck ? `https://${domain}${WELL_KNOWN_PATH}` : null, fileContent: recordValue };
}
