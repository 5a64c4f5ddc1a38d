/** The HTTP section of the configuration: connection limits, proxy trust, CORS and the origins sign-in may return to. */
import { isIP } from 'node:net';
import { EnvReader } from '../config/env-reader.ts';

/**
 * Who the client is: the socket's address, unless requests come through trusted proxies. `false`
 * trusts no forwarding header; a number trusts that many hops of `X-Forwarded-For`; a list trusts
 * forwarding only from those addresses or CIDR ranges (names `loopback`, `linklocal`, `uniquelocal`).
 */
export type TrustProxy = false | number | readonly string[];

/**
 * What one client connection may hold. Without bounds, a client trickling its body a byte at a
 * time keeps its connection (a file descriptor) open indefinitely, and enough of them lock
 * everyone else out.
 */
export interface ConnectionLimits {
  /** The request line and headers must arrive within this long of the request's first byte (or of the connection's opening). */
  readonly headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this long of its first byte. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long without a new request. */
  readonly keepAliveTimeoutMs: number;
  /** Connections open at once, per server process; further ones are closed as soon as they are accepted. */
  readonly maxConnections: number;
}

/**
 * Auth requests are small (bodies up to 16 KiB) and answered in milliseconds, so the defaults are
 * far tighter than Node's (60 s for headers, 5 min for a request): 10 s for the headers and 20 s
 * for the whole request still let a slow mobile link through, and cut a slow-body client in
 * 20 s instead of never. The keep-alive default stays at Fastify's 72 s, above the 60 s idle
 * timeout of common load balancers, so a balancer never reuses a connection we have just closed.
 */
export function parseConnectionLimits(read: EnvReader, problems: string[]): ConnectionLimits {
  const headersTimeoutMs = read.integer('HEADERS_TIMEOUT_MS', 10_000, { min: 1_000, max: 300_000 });
  const requestTimeoutMs = read.integer('REQUEST_TIMEOUT_MS', 20_000, { min: 1_000, max: 600_000 });
  const keepAliveTimeoutMs = read.integer('KEEP_ALIVE_TIMEOUT_MS', 72_000, { min: 1_000, max: 600_000 });
  // Each connection is a file descriptor; the process also needs some for storage, Redis, SMTP and
  // its own files. 4096 is far above what one process serves at once behind a load balancer (or
  // from browsers, which keep a few connections each) and far below common descriptor limits.
  const maxConnections = read.integer('MAX_CONNECTIONS', 4_096, { min: 1, max: 1_000_000 });
  // Node measures both from the request's start: a headers deadline past the request's would never fire.
  if (headersTimeoutMs > requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS must be at most REQUEST_TIMEOUT_MS (got ${headersTimeoutMs} > ${requestTimeoutMs})`);
  }
  return { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections };
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

export function parseTrustProxy(value: string | undefined, problems: string[]): TrustProxy {
  if (value === undefined || value.toLowerCase() === 'false') return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops >= 1 && hops <= 10) return hops;
  } else {
    const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
    const isValid = (entry: string) => {
      if (PROXY_NAMES.includes(entry)) return true;
      const [address, prefix, extra] = entry.split('/');
      const version = isIP(address ?? '');
      if (version === 0 || extra !== undefined) return false;
      if (prefix === undefined) return true;
      return /^\d+$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
    };
    if (entries.length > 0 && entries.every(isValid)) return entries;
  }
  problems.push(`TRUST_PROXY must be false, a hop count from 1 to 10, or a comma-separated list of addresses, CIDR ranges or loopback/linklocal/uniquelocal (got "${value}")`);
  return false;
}

export function parseCorsOrigins(value: string | undefined, problems: string[]): string[] {
  if (value === undefined) return [];
  const origins: string[] = [];
  for (const entry of value.split(',').map((item) => item.trim()).filter((item) => item !== '')) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    // An exact origin: never `*`, never a pattern, so no origin is reflected that was not named.
    if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.origin !== entry.replace(/\/$/, '')) {
      problems.push(`CORS_ORIGINS must list exact origins such as https://app.example.com (got "${entry}")`);
      continue;
    }
    origins.push(url.origin);
  }
  return origins;
}

/** Hosts where plain http is allowed in TRUSTED_ORIGINS: this machine, for development. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A host name of letters, digits, `-` and `_` (IDNs in their `xn--` form), an IPv4 address, or a bracketed IPv6 address. */
function isPlainHost(hostname: string): boolean {
  if (hostname.startsWith('[')) return hostname.endsWith(']') && isIP(hostname.slice(1, -1)) === 6;
  return /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/.test(hostname);
}

/**
 * TRUSTED_ORIGINS: the origins a `callbackUrl` may name absolutely (an app on a sibling subdomain,
 * say), so sign-in can end there. Each entry is an exact origin written as browsers serialise it
 * (`https://app.example.com`, `http://localhost:5173`): lower case, no default port, no path,
 * query, fragment or credentials, no wildcard, no trailing dot, an IDN in its `xn--` form; https
 * unless the host is loopback. Anything else is reported, with the form to write when there is one,
 * rather than guessed at: the list decides where a signed-in browser may be sent.
 */
export function parseTrustedOrigins(value: string | undefined, problems: string[]): string[] {
  if (value === undefined) return [];
  const origins = new Set<string>();
  for (const entry of value.split(',').map((item) => item.trim()).filter((item) => item !== '')) {
    const refuse = (why: string) => problems.push(`TRUSTED_ORIGINS must list exact origins such as https://app.example.com: ${why} (got "${entry}")`);
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      refuse('not a URL');
      continue;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      refuse('the scheme must be https (or http for localhost, 127.0.0.1 or [::1])');
      continue;
    }
    if (url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '' || /[?#]/.test(entry)) {
      refuse('an origin has no path, query, fragment or credentials');
      continue;
    }
    if (!isPlainHost(url.hostname) || url.hostname.endsWith('.')) {
      refuse('the host must be a plain host name or IP address (no wildcard, no trailing dot)');
      continue;
    }
    if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
      refuse('https is required except for localhost, 127.0.0.1 and [::1]');
      continue;
    }
    if (url.origin !== entry.replace(/\/$/, '')) {
      refuse(`write it as ${url.origin}`);
      continue;
    }
    origins.add(url.origin);
  }
  return [...origins];
}
