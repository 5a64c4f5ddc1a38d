/**
 * What happens below Fastify's routes, on the connection itself:
 * - how long a client may take to send its headers and its whole request, how long an idle
 *   keep-alive connection stays open, and how many connections are open at once
 *   (`ConnectionLimits` in config.ts). Without them a body trickling a byte every few seconds
 *   holds its connection forever (Fastify turns Node's request timeout off), so a thousand such
 *   clients could take every file descriptor;
 * - the answer to a request Node's HTTP parser refuses before Fastify sees it (a malformed request
 *   line, headers over the size limit, a request that took too long): the same security headers
 *   and `{error, message}` body as every other answer, instead of Node's or Fastify's bare one.
 */
import type { ServerOptions } from 'node:http';
import { http } from '../lib/node-http.ts';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config, ConnectionLimits } from '../config.ts';
import { errorDefinition, toErrorBody, type ErrorCode } from '../errors.ts';
import { generateRequestId } from './logging.ts';
import { staticSecurityHeaders } from './security-headers.ts';

/** At most one "limit reached" line this often: a flood must not flood the log too. */
const DROP_WARNING_INTERVAL_MS = 10_000;

/**
 * Fastify's server options for the limits. Node checks the header and request deadlines on a
 * timer (`connectionsCheckingInterval`, 30 s by default), so a deadline fires up to that much
 * late: the timer runs at a tenth of the shorter deadline, between 100 ms and 1 s, so a 20 s
 * request timeout cuts within 21 s, not up to 50 s. Each tick only walks the requests still arriving.
 */
export function connectionServerOptions(limits: ConnectionLimits): {
  requestTimeout: number;
  keepAliveTimeout: number;
  http: ServerOptions;
} {
  const shorter = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  return {
    // Fastify sets the server's requestTimeout from its own option (0, off, by default) after
    // creating it; Node validates headersTimeout against the requestTimeout it is created with.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(shorter / 10))),
    },
  };
}

/**
 * Caps the connections open at once: past the cap, Node closes a new connection as soon as it is
 * accepted, so the process keeps descriptors for storage and for the clients it already serves.
 */
export function limitConnections(server: Server, limits: Pick<ConnectionLimits, 'maxConnections'>, log: FastifyBaseLogger): void {
  server.maxConnections = limits.maxConnections;
  let dropped = 0;
  let lastWarningAt = Number.NEGATIVE_INFINITY;
  server.on('drop', () => {
    dropped++;
    const now = performance.now();
    if (now - lastWarningAt < DROP_WARNING_INTERVAL_MS) return;
    lastWarningAt = now;
    log.warn({ maxConnections: limits.maxConnections, dropped }, 'connection limit reached: new connections are closed (MAX_CONNECTIONS)');
    dropped = 0;
  });
}

/** Node's parser errors, by code, to ours; anything else it refuses is a malformed request. */
const PARSER_ERRORS: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: 'HEADERS_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
};

/**
 * Fastify's `clientErrorHandler` (bound to the Fastify instance): Node emits `clientError` on the
 * server for a request its parser refuses or that timed out, with the raw socket. The answer is
 * written by hand, as Node's own is: there is no request object to reply through.
 */
export function createClientErrorHandler(config: Pick<Config, 'isSecureOrigin'>) {
  const securityHeaders = Object.entries(staticSecurityHeaders(config))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return function onClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
    // A reset connection has no one to answer (nor is it worth a line).
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const code = PARSER_ERRORS[error.code ?? ''] ?? 'BAD_REQUEST';
    const status = errorDefinition(code).status;
    const requestId = generateRequestId();
    // Scanners and broken clients send these all day: no stack, which would say only "Node's
    // parser". A client that closed its side mid-request has just given up: quieter still.
    const level = error.code === 'HPE_INVALID_EOF_STATE' ? 'debug' : 'info';
    this.log[level]({ reqId: requestId, code: error.code, statusCode: status, remoteAddress: socket.remoteAddress }, 'request refused at the connection');
    // Like Node: never write into a response already under way, which would corrupt it.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (socket.writable && inFlight?.headersSent !== true) {
      const body = JSON.stringify(toErrorBody(code));
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${securityHeaders}x-request-id: ${requestId}\r\n` +
          `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}
