/**
 * What an organization may claim: a registrable host name, written as DNS compares it (lower-case
 * ASCII, an internationalised name in its punycode form: `bücher.example` is `xn--bcher-kva.example`),
 * never an IP address, a single label or a public suffix alone (`com`, `co.uk`). The public-suffix
 * check is a small built-in list of the suffixes people most often type on their own, not the whole
 * Public Suffix List: it stops a mistake, and the DNS proof decides the rest (nobody can publish a
 * record under `co.uk` itself).
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

export const MAX_DOMAIN_LENGTH = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Multi-label public suffixes refused alone (one-label suffixes, `com` and the like, are refused by the label count). */
const PUBLIC_SUFFIXES: ReadonlySet<string> = new Set([
  'co.uk', 'org.uk', 'ac.uk', 'gov.uk', 'me.uk', 'ltd.uk', 'plc.uk', 'net.uk',
  'com.au', 'net.au', 'org.au', 'edu.au', 'gov.au',
  'co.nz', 'org.nz', 'net.nz', 'co.jp', 'ne.jp', 'or.jp', 'ac.jp', 'go.jp',
  'com.br', 'net.br', 'org.br', 'gov.br', 'com.mx', 'com.ar', 'com.cn', 'net.cn', 'org.cn',
  'co.in', 'net.in', 'org.in', 'co.za', 'org.za', 'com.tr', 'co.kr', 'or.kr', 'com.sg', 'com.hk',
  'co.il', 'com.es', 'com.pt', 'co.at', 'or.at', 'com.pl', 'com.ua', 'com.tw',
  'github.io', 'gitlab.io', 'herokuapp.com', 'vercel.app', 'netlify.app', 'pages.dev', 'workers.dev',
  'appspot.com', 'cloudfront.net', 'azurewebsites.net', 'blogspot.com', 'web.app', 'firebaseapp.com',
]);

/** Names that never belong to one organization on the public internet (RFC 6761, RFC 6762). */
const RESERVED_LAST_LABELS: ReadonlySet<string> = new Set(['localhost', 'local', 'invalid', 'arpa', 'internal', 'home', 'lan', 'onion']);

/**
 * The domain in the form it is stored and compared in (lower-case ASCII, punycode), or null when it
 * is not one an organization may claim. Accepts a trailing dot and surrounding blanks.
 */
export function normaliseDomain(input: string): string | null {
  const trimmed = input.trim().replace(/\.$/, '');
  if (trimmed === '' || trimmed.length > MAX_DOMAIN_LENGTH * 4 || isIP(trimmed.replace(/^\[(.*)\]$/, '$1')) !== 0) return null;
  // domainToASCII lower-cases, maps (UTS #46) and converts to punycode; '' when it is not a valid domain.
  const ascii = domainToASCII(trimmed);
  if (ascii === '' || ascii.length > MAX_DOMAIN_LENGTH || isIP(ascii) !== 0) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return null;
  const last = labels.at(-1)!;
  // A top-level domain is letters (or an IDN's punycode): a last label of digits is an address written oddly.
  if (!/^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/.test(last) || RESERVED_LAST_LABELS.has(last)) return null;
  if (PUBLIC_SUFFIXES.has(ascii)) return null;
  return ascii;
}

/** The domain of an e-mail address, normalised as above, or null. */
export function domainOfEmail(email: string): string | null {
  const at = email.lastIndexOf('@');
  if (at <= 0 || at === email.length - 1) return null;
  return normaliseDomain(email.slice(at + 1));
}
