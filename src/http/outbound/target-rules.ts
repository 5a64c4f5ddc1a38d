/**
 * Where Gatehouse may send a request to a URL someone registered: webhooks, and the OpenID
 * Provider's back-channel logout tokens (server-side request forgery rules; each caller has its
 * own setting for non-public addresses: WEBHOOK_ALLOW_PRIVATE_TARGETS,
 * OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS). Checked twice: when an endpoint is
 * registered (the URL's shape, and an IP literal's address) and at every delivery against the
 * address actually connected to (sender.ts pins the address it checked, so DNS rebinding cannot
 * swap it between the check and the connection).
 *
 * - https only; plain http only when NODE_ENV is development or test;
 * - no credentials (`user:pass@`) and no fragment in the URL; at most 2048 characters;
 * - the receiver's address must be public unicast: loopback (127/8, ::1), private (10/8,
 *   172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10), CGNAT (100.64/10),
 *   0.0.0.0/8, multicast, broadcast, reserved and documentation ranges, NAT64 / 6to4 / Teredo
 *   prefixes, and IPv4-mapped and IPv4-compatible IPv6 forms of any of these are refused, as is
 *   `localhost`; WEBHOOK_ALLOW_PRIVATE_TARGETS=true lets them through, except the cloud metadata
 *   addresses (169.254.169.254, fd00:ec2::254, and 169.254.169.254 inside a mapped, compatible,
 *   NAT64 or 6to4 address), which are never a receiver.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export const MAX_URL_LENGTH = 2048;

export interface TargetPolicy {
  readonly allowHttp: boolean;
  readonly allowPrivate: boolean;
  /** The setting that allows non-public addresses, named in a refusal (`WEBHOOK_ALLOW_PRIVATE_TARGETS`). */
  readonly allowPrivateSetting?: string;
}

/** What a refusal of a non-public address adds: the setting that would allow it, for development. */
function privateHint(policy: TargetPolicy): string {
  return policy.allowPrivateSetting === undefined ? '' : ` (${policy.allowPrivateSetting}=true allows it, for development)`;
}

export type UrlCheck =
  | { ok: true; url: string }
  | { ok: false; reason: 'URL_INVALID' | 'URL_NOT_ALLOWED'; message: string };

/** Never a receiver, whatever WEBHOOK_ALLOW_PRIVATE_TARGETS says. */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** The address as ipaddr.js reads it, an IPv4-mapped IPv6 address as the IPv4 address it maps. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return null;
  const parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) return (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed;
}

const IPV4_COMPATIBLE = ipaddr.IPv6.parse('::');
const NAT64 = ipaddr.IPv6.parse('64:ff9b::');
const SIX_TO_FOUR = ipaddr.IPv6.parse('2002::');

/**
 * The IPv4 address an IPv6 address carries in a translating or tunnelling form: IPv4-compatible
 * (::a.b.c.d, deprecated; ipaddr.js calls it unicast), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 */
function embeddedIPv4(parsed: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = parsed.toByteArray();
  if (parsed.match(IPV4_COMPATIBLE, 96) || parsed.match(NAT64, 96)) return new ipaddr.IPv4(bytes.slice(12, 16));
  if (parsed.match(SIX_TO_FOUR, 16)) return new ipaddr.IPv4(bytes.slice(2, 6));
  return null;
}

/** Whether a receiver may be at `address` (an IPv4 or IPv6 address, brackets allowed). */
export function isAllowedAddress(address: string, allowPrivate: boolean): boolean {
  const parsed = parseAddress(address);
  if (parsed === null) return false;
  const embedded = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : null;
  // ipaddr.js writes IPv6 in its compact form (RFC 5952), as the set holds it.
  if (METADATA_ADDRESSES.has(parsed.toString()) || (embedded !== null && METADATA_ADDRESSES.has(embedded.toString()))) return false;
  if (allowPrivate) return true;
  if (parsed.range() !== 'unicast') return false;
  // 6to4 (2002::/16) and IPv4-compatible (::/96) addresses carry an IPv4 address of their own;
  // ipaddr.js calls them unicast.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).match(SIX_TO_FOUR, 16)) return false;
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).match(IPV4_COMPATIBLE, 96)) return false;
  return true;
}

/** A host name that names this machine whatever DNS says. */
function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * The URL's shape and, for an IP literal or `localhost`, its address. A host name is resolved
 * only when delivering (its answers may change): then every address it resolves to is checked.
 */
export function checkWebhookUrl(raw: string, policy: TargetPolicy): UrlCheck {
  if (typeof raw !== 'string' || raw.trim() === '') return { ok: false, reason: 'URL_INVALID', message: 'is required' };
  const text = raw.trim();
  if (text.length > MAX_URL_LENGTH) return { ok: false, reason: 'URL_INVALID', message: `must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'URL_INVALID', message: 'must be an absolute URL such as https://example.com/webhooks' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'URL_INVALID', message: 'must be an https URL' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'URL_INVALID', message: 'must not contain credentials (user:password@)' };
  if (url.hash !== '' || text.includes('#')) return { ok: false, reason: 'URL_INVALID', message: 'must not have a fragment (#)' };
  if (url.hostname === '') return { ok: false, reason: 'URL_INVALID', message: 'must name a host' };
  if (url.protocol === 'http:' && !policy.allowHttp) return { ok: false, reason: 'URL_NOT_ALLOWED', message: 'must use https (plain http only when NODE_ENV is development or test)' };
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    if (!isAllowedAddress(host, policy.allowPrivate)) return { ok: false, reason: 'URL_NOT_ALLOWED', message: `must not be a private, loopback, link-local or otherwise non-public address${privateHint(policy)}` };
  } else if (isLocalName(host) && !policy.allowPrivate) {
    return { ok: false, reason: 'URL_NOT_ALLOWED', message: `must not be localhost${privateHint(policy)}` };
  }
  // What is stored and checked again at each delivery is the normalised URL, which can be longer
  // (non-ASCII percent-encoded, IDN hosts in punycode): the limit holds for it too.
  const normalised = url.toString();
  if (normalised.length > MAX_URL_LENGTH) return { ok: false, reason: 'URL_INVALID', message: `must be at most ${MAX_URL_LENGTH} characters once encoded` };
  return { ok: true, url: normalised };
}

/** The host of a URL, for logs and mails (never its path or query, which may carry a token). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}
