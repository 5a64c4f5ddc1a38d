/** The error codes the org-domains module answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const ORG_DOMAINS_ERRORS = defineErrorCodes('org-domains', {
  DOMAIN_INVALID: { status: 422, message: 'That is not a domain an organization can claim: a registered host name such as example.com (not an IP address, a single label or a public suffix such as co.uk).' },
  DOMAIN_NOT_FOUND: { status: 404, message: 'This organization has no such domain.' },
  DOMAIN_ALREADY_ADDED: { status: 409, message: 'This organization has added that domain already.' },
  DOMAIN_LIMIT_REACHED: { status: 409, message: 'This organization has as many domains as it may have; remove one first.' },
  DOMAIN_CLAIMED_ELSEWHERE: { status: 409, message: 'Another organization has verified that domain; a domain belongs to one organization at most.' },
  DOMAIN_RECORD_NOT_FOUND: { status: 422, message: 'The verification record was not found: publish the TXT record (or the well-known file) shown for the domain, then try again once it is visible.' },
  DOMAIN_RECORD_MISMATCH: { status: 422, message: 'A record was found, but none holds this domain’s verification value: check that it was copied exactly.' },
  DOMAIN_CHECK_FAILED: { status: 502, message: 'The domain could not be checked just now (the DNS server or the web server did not answer, or its address is not allowed); try again later.' },
  DOMAIN_METHOD_UNAVAILABLE: { status: 422, message: 'That verification method is not offered on this server.' },
});

type OrgDomainsErrorCodes = typeof ORG_DOMAINS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends OrgDomainsErrorCodes {}
}
