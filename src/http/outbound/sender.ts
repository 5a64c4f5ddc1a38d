/**
 * One HTTP POST to a receiver, bounded and SSRF-safe:
 * - the URL is checked again (target-rules.ts), so a policy tightened since registration holds;
 * - the host name is resolved by our own `lookup`, which refuses the connection when any address
 *   it resolves to is not allowed and hands the socket only the addresses it checked (the address
 *   connected to is the one checked: DNS rebinding between check and connect cannot swap it);
 *   the connected socket's remote address is checked once more before a byte is sent;
 * - no connection reuse (`agent: false`), no proxy, no redirects followed (a 3xx is a failure);
 * - 10 s (WEBHOOK_TIMEOUT_MS) for everything (resolving, connect, TLS, request, the answer's head
 *   and its first bytes, however slowly they trickle), then abandoned: the worker's lane for the
 *   endpoint is held no longer;
 * - of the answer only the status and the first bytes (a snippet for the admin) are read.
 * The outcome is a value: delivered (2xx) or a short error code, never an exception.
 */
import type { ClientRequest } from 'node:http';
import type { RequestOptions } from 'node:https';
import { http, https } from '../../lib/node-http.ts';
import { isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup } from 'node:dns';
import { checkWebhookUrl, isAllowedAddress, type TargetPolicy } from './target-rules.ts';

export const SEND_TIMEOUT_MS = 10_000;
const SNIPPET_BYTES = 512;
const SNIPPET_CHARS = 100;

/** Resolves a host name to its addresses (injectable for tests). */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal?: AbortSignal;
}

export interface SendOutcome {
  delivered: boolean;
  /** The receiver's status code, when it answered. */
  responseCode: number | null;
  /** A short UPPER_SNAKE code when not delivered. */
  error: string | null;
  /** The first characters of the answer's body, printable only. */
  snippet: string | null;
}

export type Sender = (request: SendRequest) => Promise<SendOutcome>;

export class DeliveryError extends Error {
  readonly code: string;
  constructor(code: string) {
    super(code);
    this.code = code;
  }
}

/** A short code for a failure to connect or talk to the receiver (never its message, which may quote things). */
export function errorCode(error: unknown): string {
  if (error instanceof DeliveryError) return error.code;
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (code === 'ECONNREFUSED') return 'CONNECTION_REFUSED';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'ENODATA') return 'DNS_FAILED';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_PREMATURE_CLOSE') return 'CONNECTION_RESET';
  if (code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT') return 'TIMEOUT';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'HOST_UNREACHABLE';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/.test(code)) return 'TLS_ERROR';
  if (code === 'ABORT_ERR') return 'ABORTED';
  return 'NETWORK_ERROR';
}

function snippetOf(bytes: Buffer): string | null {
  const text = bytes.toString('utf8').replace(/\uFFFD+$/, '').replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  if (text === '') return null;
  return [...text].slice(0, SNIPPET_CHARS).join('');
}

/** A `lookup` that resolves, refuses any answer that is not allowed, and connects only to what it checked. */
export function createPinnedLookup(policy: TargetPolicy, resolve: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        const family = typeof options === 'object' && options !== null ? options.family : undefined;
        const wanted = family === 4 || family === 6 ? all.filter((entry) => entry.family === family) : all;
        if (wanted.length === 0) return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '', 0);
        if (wanted.some((entry) => !isAllowedAddress(entry.address, policy.allowPrivate))) return callback(new DeliveryError('ADDRESS_NOT_ALLOWED'), '', 0);
        if (typeof options === 'object' && options !== null && options.all) return (callback as unknown as (error: null, addresses: typeof wanted) => void)(null, wanted);
        callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, '', 0),
    );
  };
}

/** The address actually connected to, once more before a byte is sent (an IP literal skips the lookup). */
export function checkConnectedAddress(outgoing: ClientRequest, policy: TargetPolicy): void {
  outgoing.on('socket', (socket) => {
    const verify = () => {
      const remote = socket.remoteAddress;
      if (remote === undefined || !isAllowedAddress(remote, policy.allowPrivate)) outgoing.destroy(new DeliveryError('ADDRESS_NOT_ALLOWED'));
    };
    if (socket.remoteAddress !== undefined && !socket.connecting) verify();
    else socket.once('connect', verify);
  });
}

/**
 * `tls`: for https, `ca` trusted instead of the system's roots (a private CA), and a client
 * certificate and key presented to a receiver that asks for one (mutual TLS: lazy migration's old system).
 */
export function createSender(deps: { policy: TargetPolicy; resolve?: Resolver; timeoutMs?: number; tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer }; userAgent?: string }): Sender {
  const { policy } = deps;
  const userAgent = deps.userAgent ?? 'Gatehouse-Webhooks/1.0';
  const resolve = deps.resolve ?? systemResolver;
  const timeoutMs = deps.timeoutMs ?? SEND_TIMEOUT_MS;

  const pinnedLookup = createPinnedLookup(policy, resolve);

  return (request) =>
    new Promise<SendOutcome>((settle) => {
      const failed = (error: string, responseCode: number | null = null, snippet: string | null = null): SendOutcome => ({ delivered: false, responseCode, error, snippet });
      const check = checkWebhookUrl(request.url, policy);
      if (!check.ok) return settle(failed('URL_NOT_ALLOWED'));
      const url = new URL(check.url);
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      const isHttps = url.protocol === 'https:';
      let isSettled = false;
      const finish = (outcome: SendOutcome) => {
        if (isSettled) return;
        isSettled = true;
        clearTimeout(deadline);
        request.signal?.removeEventListener('abort', onAbort);
        settle(outcome);
      };
      const options: RequestOptions = {
        method: 'POST',
        hostname: host,
        port: url.port === '' ? (isHttps ? 443 : 80) : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: { 'content-type': 'application/json', ...request.headers, 'content-length': String(Buffer.byteLength(request.body)), 'user-agent': userAgent },
        agent: false,
        ...(isIP(host) === 0 && { lookup: pinnedLookup }),
        ...(isHttps && deps.tls?.ca !== undefined && { ca: deps.tls.ca }),
        ...(isHttps && deps.tls?.cert !== undefined && deps.tls.key !== undefined && { cert: deps.tls.cert, key: deps.tls.key }),
      };
      const outgoing = (isHttps ? https : http).request(options, (response) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const snippet = snippetOf(Buffer.concat(chunks).subarray(0, SNIPPET_BYTES));
          if (status >= 200 && status < 300) finish({ delivered: true, responseCode: status, error: null, snippet });
          else finish(failed(status >= 300 && status < 400 ? 'REDIRECT_NOT_FOLLOWED' : 'HTTP_STATUS', status, snippet));
          response.destroy();
          outgoing.destroy();
        };
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= SNIPPET_BYTES) done();
        });
        response.on('end', done);
        response.on('error', done);
        response.on('close', done);
      });
      checkConnectedAddress(outgoing, policy);
      outgoing.on('error', (error) => finish(failed(errorCode(error))));
      const deadline = setTimeout(() => outgoing.destroy(new DeliveryError('TIMEOUT')), timeoutMs);
      deadline.unref();
      const onAbort = () => outgoing.destroy(new DeliveryError('ABORTED'));
      if (request.signal?.aborted) onAbort();
      else request.signal?.addEventListener('abort', onAbort, { once: true });
      outgoing.end(request.body);
    });
}
