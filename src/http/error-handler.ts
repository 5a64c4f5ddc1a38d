/**
 * The single error mapper: turns anything a route throws into `{error, message}` with the code's
 * status (a form post to a route with `formErrorPage` is sent back to its page instead), answers
 * 404s, and decides what reaches the log: a dependency that is down is a warning without a stack,
 * a client that went away is an info line, anything else an error (and 500 INTERNAL_ERROR, which
 * reveals nothing).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError, errorDefinition, UnavailableError, toErrorBody, type ErrorBody, type ErrorCode, type FieldError } from '../errors.ts';
import { isFormPost } from './forms.ts';
import { keepFormValues } from './form-values.ts';
import { toSafeLocalPath, toTrustedOriginUrl } from './safe-redirect.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * For routes that HTML forms post to: on an error (other than CSRF_FAILED), a form post is
     * redirected here with `?error=CODE` (and `&reason=` for a refusal with a reason code, a
     * password the policy refused) instead of receiving a JSON body.
     */
    formErrorPage?: string;
  }
}

/** Fastify's own client errors, by their code, to ours. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_BAD_URL: 'BAD_REQUEST',
  FST_ERR_ASYNC_CONSTRAINT: 'BAD_REQUEST',
};

/** Network-level failures of a database driver: the dependency is down, not our bug. */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'SQLITE_BUSY',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

export function isUnavailable(error: unknown): boolean {
  if (error instanceof UnavailableError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  // pg's words for a connection that died under a query, or for reusing one that did (a
  // transaction's ROLLBACK on a dropped connection reports the latter).
  return /Connection terminated|timeout exceeded when trying to connect|is not queryable|database is locked/i.test(message);
}

/** Codes of a stream that ended because its peer went away. */
const CLIENT_GONE_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE']);

/**
 * The request failed because the client went away while we were reading it: the request stream
 * itself failed, or it was torn down before it was complete and the error says the peer left.
 * A dependency's ECONNRESET comes after the body has been read, so it is never taken for one.
 */
function isClientAbort(error: unknown, request: FastifyRequest): boolean {
  const raw = request.raw;
  if (raw.errored !== null && raw.errored === error) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return raw.destroyed && !raw.complete && typeof code === 'string' && CLIENT_GONE_CODES.has(code);
}

/** A refusal's reason code (a new password's TOO_SHORT, say): what a page may be told, never what was typed. */
const REASON_CODE = /^[A-Z][A-Z0-9_]{0,39}$/;

/**
 * Installs the single error mapper and the 404 handler. `trustedOrigins` (TRUSTED_ORIGINS) lets a
 * form's `callbackUrl` on one of them ride along when the form is sent back to its page;
 * `isSecureOrigin` marks the cookie that keeps a form's values (`formKeptFields`) Secure.
 */
export function registerErrorHandling(
  app: FastifyInstance,
  options: {
    trustedOrigins?: readonly string[];
    isSecureOrigin?: boolean;
    /** A browser asking for a page gets this page for a 404 or a 405 instead of the JSON error (web/forbidden-page.ts). */
    statusPage?: { wants(request: FastifyRequest): boolean; send(reply: FastifyReply, status: 404 | 405): FastifyReply };
  } = {},
): void {
  const trustedOrigins = options.trustedOrigins ?? [];
  const cookieConfig = { isSecureOrigin: options.isSecureOrigin ?? false };
  const { statusPage } = options;
  app.setNotFoundHandler((request, reply) => {
    if (statusPage?.wants(request)) return statusPage.send(reply, 404);
    void reply.code(404).send(toErrorBody('NOT_FOUND'));
  });

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (isClientAbort(error, request)) {
      // The connection closed before the whole request arrived (the client gave up, or a
      // request timeout cut it): its ECONNRESET is no outage and no bug, and no one is left to
      // answer. One quiet line, without a stack.
      request.log.info({ code: (error as { code?: unknown }).code }, 'connection closed before the whole request was read');
      return sendError(reply, 400, toErrorBody('BAD_REQUEST'));
    }
    const mapped = mapError(error);
    // A dependency being down is expected and is the operator's to fix, not a bug: warn, so an
    // outage under load does not bury real errors (before, 503s were logged as 'request failed').
    if (mapped.code === 'SERVICE_UNAVAILABLE') {
      request.log.warn({ err: error }, 'dependency unavailable');
    } else if (mapped.status >= 500) {
      request.log.error({ err: error }, 'request failed');
    }
    if (statusPage !== undefined && (mapped.code === 'METHOD_NOT_ALLOWED' || mapped.code === 'NOT_FOUND') && statusPage.wants(request)) {
      return statusPage.send(reply, mapped.status === 405 ? 405 : 404);
    }
    const formErrorPage = request.routeOptions.config.formErrorPage;
    if (formErrorPage !== undefined && mapped.code !== 'CSRF_FAILED' && isFormPost(request)) {
      // A person submitted a form: show them the form again with the reason, not a JSON body.
      const target = new URLSearchParams({ error: mapped.code });
      // A single refused field with a reason code (a password the policy refused) names it.
      const refusals = mapped.body.errors ?? [];
      const reason = refusals.length === 1 ? refusals[0]!.reason : undefined;
      if (reason !== undefined && REASON_CODE.test(reason)) target.set('reason', reason);
      // The redirect itself always stays on our origin (`formErrorPage`); the callback only rides
      // along in its query, for the page to judge again. A path of ours or a URL on a trusted
      // origin is kept (a mistyped password must not lose the way back to the app); anything
      // else is dropped rather than carried.
      const requested = (request.body as { callbackUrl?: unknown } | null | undefined)?.callbackUrl;
      const callbackUrl = toTrustedOriginUrl(requested, trustedOrigins) ?? toSafeLocalPath(requested, 'http://x', '');
      if (callbackUrl !== '') target.set('callbackUrl', callbackUrl);
      if (mapped.retryAfterSeconds !== undefined) void reply.header('retry-after', retryAfterHeader(mapped.retryAfterSeconds));
      // What was typed (never a password) comes back through a short-lived cookie, not the URL.
      const keptFields = request.routeOptions.config.formKeptFields;
      if (keptFields !== undefined) {
        keepFormValues(request, reply, { page: formErrorPage, fields: keptFields, invalidFields: refusals.map((refusal) => refusal.field), config: cookieConfig });
      }
      return reply.redirect(`${formErrorPage}?${target}`, 303);
    }
    return sendError(reply, mapped.status, mapped.body, mapped.retryAfterSeconds);
  });
}

export function sendError(reply: FastifyReply, status: number, body: ErrorBody, retryAfterSeconds?: number): FastifyReply {
  if (retryAfterSeconds !== undefined) void reply.header('retry-after', retryAfterHeader(retryAfterSeconds));
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

function retryAfterHeader(seconds: number): string {
  return String(Math.max(1, Math.ceil(seconds)));
}

interface MappedError {
  status: number;
  code: ErrorCode;
  body: ErrorBody;
  retryAfterSeconds?: number;
}

function mapError(error: FastifyError | Error): MappedError {
  if (error instanceof AppError) {
    return {
      status: error.status,
      code: error.code,
      // The stable keys last: a field can never replace the code or the message.
      body: { ...error.fields, ...toErrorBody(error.code, error.message, error.errors) },
      ...(error.retryAfterSeconds !== undefined && { retryAfterSeconds: error.retryAfterSeconds }),
    };
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const errors = error.validation.map((issue) => ({
      field: fieldName(issue.instancePath),
      message: issue.message ?? 'is invalid',
    }));
    return { status: 422, code: 'VALIDATION_ERROR', body: toErrorBody('VALIDATION_ERROR', undefined, dedupeFields(errors)) };
  }
  if (isUnavailable(error)) {
    const retryAfterSeconds = error instanceof UnavailableError ? error.retryAfterSeconds : 1;
    return { status: 503, code: 'SERVICE_UNAVAILABLE', body: toErrorBody('SERVICE_UNAVAILABLE'), retryAfterSeconds };
  }
  const fastifyCode = (error as FastifyError).code;
  const known = fastifyCode !== undefined ? FASTIFY_CODES[fastifyCode] : undefined;
  if (known !== undefined) return { status: errorDefinition(known).status, code: known, body: toErrorBody(known) };

  // JSON.parse and secure-json-parse (prototype poisoning) throw SyntaxErrors carrying a 400.
  const statusCode = (error as FastifyError).statusCode;
  if (error instanceof SyntaxError && statusCode === 400) {
    return { status: 400, code: 'MALFORMED_JSON', body: toErrorBody('MALFORMED_JSON') };
  }
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500) {
    const code: ErrorCode =
      statusCode === 404 ? 'NOT_FOUND' : statusCode === 405 ? 'METHOD_NOT_ALLOWED' : statusCode === 413 ? 'PAYLOAD_TOO_LARGE' : statusCode === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'BAD_REQUEST';
    return { status: errorDefinition(code).status, code, body: toErrorBody(code) };
  }
  // Anything else is our bug: the body says nothing about it; the log has it.
  return { status: 500, code: 'INTERNAL_ERROR', body: toErrorBody('INTERNAL_ERROR') };
}

/** `/email` -> `email`, `/user/name` -> `user.name`, `` (the whole body) -> `body`. */
function fieldName(instancePath: string): string {
  const path = instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  return path === '' ? 'body' : path;
}

/** One message per field: the first problem is the one worth fixing first. */
function dedupeFields(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => (seen.has(e.field) ? false : (seen.add(e.field), true)));
}
