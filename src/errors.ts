/**
 * Every error a client can see has a stable UPPER_SNAKE `code`, a status and a human `message`.
 * `AppError` is raised only at the HTTP boundary; `http/error-handler.ts` is the single place that
 * turns anything thrown into a response body, and the only one that decides what reaches a log.
 */
// The route guard's denials read the same in the service and in gatehouse/protect.
import { DENIALS } from './authorization/contract.ts';

export const ERROR_CATALOGUE = {
  BAD_REQUEST: DENIALS.BAD_REQUEST,
  MALFORMED_JSON: { status: 400, message: 'The request body is not valid JSON.' },
  INVALID_CREDENTIALS: { status: 401, message: 'The e-mail or password is invalid.' },
  UNAUTHENTICATED: DENIALS.UNAUTHENTICATED,
  INVALID_TOKEN: { status: 401, message: 'The token is invalid or has expired.' },
  TOKEN_REUSED: { status: 401, message: 'This refresh token was already used; the session has been ended for safety.' },
  CSRF_FAILED: { status: 403, message: 'The request did not come from this site or its CSRF token is missing or invalid.' },
  ACCOUNT_DISABLED: { status: 403, message: 'This account is disabled.' },
  EMAIL_NOT_VERIFIED: { status: 403, message: 'Verify your e-mail address before signing in.' },
  FORBIDDEN: DENIALS.FORBIDDEN,
  NOT_FOUND: { status: 404, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request took too long to arrive.' },
  TOKEN_EXPIRED: { status: 400, message: 'This link has expired. Ask for a new one.' },
  SIGNUP_DISABLED: { status: 403, message: 'Sign-up is disabled on this service.' },
  EMAIL_TAKEN: { status: 409, message: 'A user with this e-mail address already exists.' },
  LAST_SIGN_IN_METHOD: { status: 409, message: 'This is your last way to sign in: set a password or link another provider first.' },
  SELF_LOCKOUT: { status: 409, message: 'You cannot disable your own account or remove your own ADMIN role.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send the body as application/json.' },
  VALIDATION_ERROR: { status: 422, message: 'The request has invalid fields.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests. Try again later.' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large.' },
  INTERNAL_ERROR: { status: 500, message: 'Something went wrong on our side.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable. Try again shortly.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export interface FieldError {
  field: string;
  message: string;
  /** A stable code for a refusal a client may want to act on (a new password's `TOO_SHORT`, say). */
  reason?: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: readonly FieldError[] | undefined;
  readonly retryAfterSeconds: number | undefined;
  /** Fields the contract adds to this error's body (a sign-in challenge's token, say); never a secret of the account. */
  readonly fields: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: ErrorCode,
    options: {
      message?: string;
      errors?: readonly FieldError[];
      retryAfterSeconds?: number;
      /** The endpoint's own status for this code, where the contract says so (INVALID_TOKEN is 401 on refresh, 400 on reset). */
      status?: number;
      fields?: Readonly<Record<string, unknown>>;
      cause?: unknown;
    } = {},
  ) {
    super(options.message ?? ERROR_CATALOGUE[code].message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = options.status ?? ERROR_CATALOGUE[code].status;
    this.errors = options.errors;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.fields = options.fields;
  }
}

/**
 * A dependency (database, hashing capacity, …) cannot serve the request right now. Services throw
 * it; the HTTP layer answers 503 SERVICE_UNAVAILABLE with `Retry-After`, never 500, never access.
 */
export class UnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, options: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'UnavailableError';
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
  }
}

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  errors?: FieldError[];
}

export function toErrorBody(code: ErrorCode, message?: string, errors?: readonly FieldError[]): ErrorBody {
  const body: ErrorBody = { error: code, message: message ?? ERROR_CATALOGUE[code].message };
  if (errors !== undefined) body.errors = [...errors];
  return body;
}
