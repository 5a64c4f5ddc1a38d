/**
 * Logger options: pino with request ids, and nothing secret in any line. Request logs carry
 * method, path and peer only (never headers or bodies); query values that can be bearer secrets
 * are masked; and secrets that a handler might log by mistake are censored by key, at any depth.
 */
import { randomUUID } from 'node:crypto';
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from '../config.ts';
import type { Logger } from '../lib/logger.ts';
import { logWriterFor, type LogWriter } from '../lib/log-writer.ts';

const SECRET_QUERY_NAME = /^(?:token|code|state|password|csrf_?token|refresh_?token|access_?token|id_?token)$/i;

/** pino's fixed paths; `redactSecrets` is what holds at any depth and in any letter case. */
export const REDACTED_PATHS = [
  'password',
  'newPassword',
  'token',
  'csrfToken',
  'refreshToken',
  'accessToken',
  'authSecret',
  '*.password',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.accessToken',
  '*.authSecret',
  '*.csrfToken',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
];

/**
 * Keys whose values are never logged, compared in lower case without `-` and `_` (so `Authorization`,
 * `set-cookie`, `code_verifier` and `refresh_token` all match).
 */
const SECRET_KEYS = new Set([
  'password',
  'newpassword',
  'currentpassword',
  'pass', // nodemailer's { user, pass }
  'passwordhash',
  'token',
  'accesstoken',
  'refreshtoken',
  'idtoken',
  'sessiontoken',
  'csrftoken',
  'xcsrftoken',
  'secret',
  'clientsecret',
  'authsecret',
  'apikey',
  'privatekey',
  'authorization',
  'proxyauthorization',
  'cookie',
  'setcookie',
  'codeverifier',
]);
const CENSOR = '[REDACTED]';
/** Deeper than any line we mean to write; below it an object is dropped rather than left unchecked. */
const MAX_REDACT_DEPTH = 8;
/** What pino's `err` serializer returns (a plain-looking object on a prototype of its own). */
const SERIALIZED_ERROR_PROTO: unknown = Object.getPrototypeOf(pino.stdSerializers.err(new Error('probe')));

const isSecretKey = (key: string) => SECRET_KEYS.has(key.toLowerCase().replace(/[-_]/g, ''));

/**
 * Objects whose own enumerable properties are what gets logged, so they can be copied and checked.
 * Class instances (a Fastify request, a socket) are left to their serializers: walking them would be
 * costly and would change how they print.
 */
function isWalkable(value: object): boolean {
  if (Array.isArray(value) || value instanceof Error) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || proto === SERIALIZED_ERROR_PROTO;
}

/**
 * The value with every secret-named key censored at any depth. Never changes its argument: what
 * holds a secret is copied (as the plain object JSON would print), everything else is returned as is.
 */
export function redactSecrets<T>(value: T): T {
  return redactValue(value, 0, []) as T;
}

function redactValue(value: unknown, depth: number, ancestors: object[]): unknown {
  if (typeof value !== 'object' || value === null || !isWalkable(value)) return value;
  if (ancestors.includes(value)) return '[Circular]';
  if (depth >= MAX_REDACT_DEPTH) return '[Truncated]';
  ancestors.push(value);
  try {
    if (Array.isArray(value)) {
      const items = value.map((item) => redactValue(item, depth + 1, ancestors));
      return items.some((item, i) => item !== value[i]) ? items : value;
    }
    let copy: Record<string, unknown> | undefined;
    const source = value as Record<string, unknown>;
    const keys = Object.keys(source);
    for (const [index, key] of keys.entries()) {
      const original = source[key];
      const next = original !== undefined && isSecretKey(key) ? CENSOR : redactValue(original, depth + 1, ancestors);
      if (next !== original && copy === undefined) {
        copy = {};
        for (const earlier of keys.slice(0, index)) copy[earlier] = source[earlier];
      }
      if (copy !== undefined) copy[key] = next;
    }
    return copy ?? value;
  } finally {
    ancestors.pop();
  }
}

/**
 * The logged object's `err` is left whole for pino's error serializer (it reads the stack and
 * causes), whose output is then censored: errors from HTTP clients carry request headers.
 */
function redactLogObject(object: Record<string, unknown>): Record<string, unknown> {
  const { err, ...rest } = object;
  const redacted = redactSecrets(rest);
  if (redacted === rest) return object;
  return 'err' in object ? { ...redacted, err } : redacted;
}

const redactingErrorSerializer = (error: unknown) => redactSecrets(pino.stdSerializers.err(error as Error));

/**
 * A query value that is itself a URL or path with a query (`callbackUrl=/accept%3Ftoken%3D…`): its
 * own secrets masked the same way, a few levels deep.
 */
function maskNestedUrl(rawValue: string, depth: number): string {
  if (depth >= MAX_URL_NESTING || !/%3f|\?/i.test(rawValue)) return rawValue;
  let value: string;
  try {
    value = decodeURIComponent(rawValue.replace(/\+/g, ' '));
  } catch {
    return rawValue;
  }
  const masked = maskSecretsInUrl(value, depth + 1);
  return masked === value ? rawValue : encodeURIComponent(masked);
}

const MAX_URL_NESTING = 3;

/** The URL with the values of secret-looking query parameters masked, however their names are encoded, in nested URLs too. */
export function maskSecretsInUrl(url: string, depth = 0): string {
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const masked = url
    .slice(queryStart + 1)
    .split('&')
    .map((pair) => {
      const [rawName = '', ...value] = pair.split('=');
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        return `${rawName}=[REDACTED]`; // undecodable: do not guess
      }
      if (SECRET_QUERY_NAME.test(name) && value.length > 0) return `${rawName}=[REDACTED]`;
      return `${rawName}${value.length > 0 ? `=${maskNestedUrl(value.join('='), depth)}` : ''}`;
    })
    .join('&');
  return `${url.slice(0, queryStart)}?${masked}`;
}

/** What the request logger and the process logger share: the level and the censoring. */
function baseLoggerOptions(config: Pick<Config, 'logLevel'>) {
  return {
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: CENSOR },
    formatters: { log: redactLogObject, bindings: redactSecrets },
    serializers: { err: redactingErrorSerializer },
  } satisfies pino.LoggerOptions;
}

export function loggerOptions(config: Pick<Config, 'logLevel'>): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  const base = baseLoggerOptions(config);
  return {
    ...base,
    serializers: {
      ...base.serializers,
      req(request: FastifyRequest) {
        // A handler may log some other object as `req`: that must not throw in the middle of a request.
        const url = typeof request.url === 'string' ? maskSecretsInUrl(request.url) : undefined;
        return { method: request.method, url, remoteAddress: request.ip };
      },
    },
  };
}

/**
 * Where the server's lines go: standard output through the non-blocking writer (lib/log-writer.ts),
 * JSON lines or, with LOG_FORMAT=pretty, lines for a person. Fastify's logger and the process
 * logger share it.
 */
export function serverLogDestination(config: Partial<Pick<Config, 'logFormat'>>): LogWriter {
  return logWriterFor(1, { format: config.logFormat ?? 'json' });
}

/**
 * The logger of work outside a request (background jobs, failed audit writes): same level and
 * redaction as the request logs. The server writes to stdout, never blocking (see
 * `serverLogDestination`); the CLI passes 2: stderr, written synchronously (a command's warnings
 * must not be lost at its exit, and it serves nobody while it waits), keeping its stdout for
 * output; tests pass a stream.
 */
export function createLogger(config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>, destination: 1 | 2 | pino.DestinationStream = 1): Logger {
  const stream = destination === 1 ? serverLogDestination(config) : destination === 2 ? pino.destination({ dest: 2, sync: true }) : destination;
  return pino(baseLoggerOptions(config), stream);
}

let requestsBegun = 0;

/**
 * How many requests this process's servers have begun (Fastify calls the controller below for
 * every one, found or not): with the event loop's utilization, what tells an idle process from a
 * quiet one (lib/idle-memory-release.ts). Per process, like that utilization.
 */
export const requestsBegunInProcess = (): number => requestsBegun;

/**
 * The request lines, written by Fastify's own log controller (no hook of ours runs per request):
 * at info, one line per request when it is answered (`request completed`: method, path with
 * secrets masked, route, status, time taken, request id; `request errored` at error when the
 * response failed); at debug, also one as it arrives (`incoming request`). Every other line of
 * Fastify's (its error handler's, a route not found) is as Fastify writes it.
 */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    requestsBegun++;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const route = request.routeOptions.url ?? null;
    const responseTime = Math.round(reply.elapsedTime * 100) / 100;
    if (error) {
      request.log.error({ req: request, route, statusCode: reply.statusCode, responseTime, err: error }, 'request errored');
      return;
    }
    const log: unknown = request.log;
    if (log instanceof LazyRequestLogger && log.wroteCompleted(request, route, reply.statusCode, responseTime)) return;
    request.log.info({ req: request, route, statusCode: reply.statusCode, responseTime }, 'request completed');
  }
}

const asJson = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));

type LevelName = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * Fastify's per-request logger (its `childLoggerFactory`), made on first use. pino's `child()`
 * serialises the bindings at once, through the censoring above: a few per cent of a fast request,
 * and most requests log nothing. A call below the level returns without making the child; the
 * first call at or above it makes the same child Fastify's default factory would.
 */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: pino.Bindings, options: pino.ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger as pino.Logger, bindings, options) as unknown as FastifyBaseLogger;
}

class LazyRequestLogger {
  readonly #parent: pino.Logger;
  readonly #bindings: pino.Bindings;
  readonly #options: pino.ChildLoggerOptions;
  readonly #threshold: number;
  #child: pino.Logger | null = null;

  constructor(parent: pino.Logger, bindings: pino.Bindings, options: pino.ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
    this.#threshold = parent.levels.values[options.level ?? parent.level] ?? 0;
  }

  #made(): pino.Logger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options));
  }

  /**
   * The `request completed` line of a request that logged nothing else, written straight to the
   * parent's destination: the line pino would write (same keys, order and values: a test compares
   * the two), without making the child, copying the object and walking it for secrets. Every key
   * is fixed here and no value can hold a secret (the URL's are masked), so there is nothing to
   * censor. False (the caller logs it the ordinary way) when the child exists, info is not
   * logged, or the bindings are not Fastify's plain request id.
   */
  wroteCompleted(request: FastifyRequest, route: string | null, statusCode: number, responseTime: number): boolean {
    if (this.#child !== null || Object.keys(this.#options).length > 0 || !this.#parent.isLevelEnabled('info')) return false;
    const { reqId } = this.#bindings as { reqId?: unknown };
    if (typeof reqId !== 'string' || Object.keys(this.#bindings).length !== 1) return false;
    const parent = this.#parent as unknown as Record<symbol, unknown>;
    const stream = parent[pino.symbols.streamSym] as { write?: (line: string) => void } | undefined;
    const bindings = parent[pino.symbols.chindingsSym];
    if (typeof stream?.write !== 'function' || typeof bindings !== 'string') return false;
    const url = typeof request.url === 'string' ? asJson(maskSecretsInUrl(request.url)) : undefined;
    stream.write(
      `{"level":30,"time":${Date.now()}${bindings},"reqId":${asJson(reqId)},"req":{"method":${asJson(request.method)}${url === undefined ? '' : `,"url":${url}`},"remoteAddress":${asJson(request.ip)}},` +
        `"route":${asJson(route)},"statusCode":${statusCode},"responseTime":${responseTime},"msg":"request completed"}\n`,
    );
    return true;
  }

  #log(level: LevelName, args: unknown[]): void {
    if (this.#child === null && (this.#parent.levels.values[level] ?? 0) < this.#threshold) return;
    const child = this.#made();
    (child[level] as (...args: unknown[]) => void).apply(child, args);
  }

  get level(): string {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }
  set level(level: string) {
    this.#made().level = level;
  }
  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  silent(): void {}
  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger {
    return this.#made().child(bindings, options);
  }
}

/** Request ids are ours (a client-chosen id could forge log lines); echoed as `x-request-id`. */
export function generateRequestId(): string {
  return randomUUID();
}
