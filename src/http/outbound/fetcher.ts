/**
 * One HTTP GET of a document another party publishes (a client's metadata document, a JWKS, an
 * identity provider's metadata), under the outbound rules webhooks follow (target-rules.ts,
 * sender.ts): the URL checked, the host resolved by our pinned lookup (every address it resolves
 * to allowed, and the socket connected only to those), the connected address checked once more, no
 * connection reuse, no proxy, no redirect followed (a 3xx is answered as it came, for the caller to
 * refuse), at most `maxBytes` of body (more is an error) and `timeoutMs` for everything. Shaped as
 * `fetch` so that libraries that take a fetch (oidc-provider, openid-client) use it as they would
 * the global one. GET only, unless the caller allows POST too (`methods`: an OpenID Connect
 * relying party's token request, a form body), under the same rules.
 */
import { http, https } from '../../lib/node-http.ts';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { checkWebhookUrl, type TargetPolicy } from './target-rules.ts';
import { checkConnectedAddress, createPinnedLookup, DeliveryError, systemResolver, type Resolver } from './sender.ts';

export interface DocumentFetchOptions {
  policy: TargetPolicy;
  /** Default 5 s. */
  timeoutMs?: number;
  /** Default 64 KiB. */
  maxBytes?: number;
  /** Extra certificate authorities (PEM) trusted besides the system's, for a private PKI. */
  ca?: string;
  userAgent?: string;
  resolve?: Resolver;
  /** The methods sent; default GET only. */
  methods?: readonly ('GET' | 'POST')[];
}

/** What a POST may carry: what openid-client sends (a form, as URLSearchParams), or bytes. */
type RequestBody = string | URLSearchParams | Uint8Array | ArrayBuffer | null | undefined;

export type DocumentFetch = (url: string | URL, init?: { method?: string; headers?: ConstructorParameters<typeof Headers>[0]; body?: RequestBody; signal?: AbortSignal | null }) => Promise<Response>;

function bodyBytes(body: RequestBody): Buffer | null {
  if (body === null || body === undefined) return null;
  if (typeof body === 'string' || body instanceof URLSearchParams) return Buffer.from(String(body));
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('the body must be a string, a form or bytes');
}

export function createDocumentFetch(options: DocumentFetchOptions): DocumentFetch {
  const { policy } = options;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxBytes = options.maxBytes ?? 65_536;
  const lookup = createPinnedLookup(policy, options.resolve ?? systemResolver);
  // An explicit `ca` replaces Node's bundled roots: they are kept beside it.
  const rootCas = options.ca === undefined ? undefined : [...rootCertificates, options.ca];
  const methods: readonly string[] = options.methods ?? ['GET'];

  return (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const method = (init.method ?? 'GET').toUpperCase();
      if (!methods.includes(method)) return reject(new TypeError(`only ${methods.join(' and ')} are fetched this way, not ${method}`));
      let body: Buffer | null;
      try {
        body = method === 'GET' ? null : bodyBytes(init.body);
      } catch (error) {
        return reject(error);
      }
      const check = checkWebhookUrl(String(input), policy);
      if (!check.ok) return reject(new DeliveryError('URL_NOT_ALLOWED'));
      const url = new URL(check.url);
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      const isHttps = url.protocol === 'https:';
      const headers: Record<string, string> = {};
      new Headers(init.headers ?? {}).forEach((value, name) => {
        headers[name] = value;
      });
      headers['user-agent'] = options.userAgent ?? 'Gatehouse/1.0';
      if (body !== null) headers['content-length'] = String(body.length);
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        reject(error);
      };
      const outgoing = (isHttps ? https : http).request(
        {
          method,
          hostname: host,
          port: url.port === '' ? (isHttps ? 443 : 80) : Number(url.port),
          path: `${url.pathname}${url.search}`,
          headers,
          agent: false,
          ...(isIP(host) === 0 && { lookup }),
          ...(isHttps && rootCas !== undefined && { ca: rootCas }),
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) {
              outgoing.destroy(new DeliveryError('RESPONSE_TOO_LARGE'));
              return;
            }
            chunks.push(chunk);
          });
          response.on('error', fail);
          response.on('end', () => {
            if (settled) return;
            // Whatever the other side sent must not throw here (an event handler: it would end the
            // process): a status a Response cannot carry, or a header it refuses, is a failure.
            let answer: Response;
            try {
              const status = response.statusCode ?? 0;
              if (status < 200 || status > 599) throw new DeliveryError('HTTP_STATUS');
              const responseHeaders = new Headers();
              for (const [name, value] of Object.entries(response.headers)) {
                if (value === undefined) continue;
                for (const item of [value].flat()) responseHeaders.append(name, item);
              }
              answer = new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: responseHeaders });
            } catch (error) {
              fail(error);
              return;
            }
            settled = true;
            clearTimeout(deadline);
            resolve(answer);
          });
        },
      );
      checkConnectedAddress(outgoing, policy);
      outgoing.on('error', fail);
      const deadline = setTimeout(() => outgoing.destroy(new DeliveryError('TIMEOUT')), timeoutMs);
      deadline.unref();
      const signal = init.signal ?? undefined;
      if (signal?.aborted) outgoing.destroy(new DeliveryError('ABORTED'));
      else signal?.addEventListener('abort', () => outgoing.destroy(new DeliveryError('ABORTED')), { once: true });
      outgoing.end(body ?? undefined);
    });
}
