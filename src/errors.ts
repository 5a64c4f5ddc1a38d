/**
 * Every error a client can see has a stable UPPER_SNAKE `code`, a status and a human `message`.
 * `AppError` is raised only at the HTTP boundary; `http/error-handler.ts` is the single place that
 * turns anything thrown into a response body, and the only one that decides what reaches a log.
 */
// The route guard's denials read the same in the service and in gatehouse-protect.
import { DENIALS } from '../packages/protect/src/contract.ts';

export interface ErrorDefinition {
  readonly status: number;
  readonly message: string;
}

/**
 * The codes of the HTTP plumbing, which no module owns: malformed requests, route-guard denials,
 * limits, failures. Every other code is declared by the module whose routes answer it, with
 * `defineErrorCodes` in its own `<module>.errors.ts`, and listed in its module definition.
 */
export const CORE_ERRORS = {
  BAD_REQUEST: DENIALS.BAD_REQUEST,
  MALFORMED_JSON: { status: 400, message: 'The request body is not valid JSON.' },
  UNAUTHENTICATED: DENIALS.UNAUTHENTICATED,
  CSRF_FAILED: { status: 403, message: 'The request did not come from this site or its CSRF token is missing or invalid.' },
  FORBIDDEN: DENIALS.FORBIDDEN,
  STEP_UP_REQUIRED: DENIALS.STEP_UP_REQUIRED,
  /** Path rules that ask for a token's scopes (`scopeRequirements`, shared with gatehouse-protect); none of Gatehouse's own rules does yet. */
  INSUFFICIENT_SCOPE: DENIALS.INSUFFICIENT_SCOPE,
  NOT_FOUND: { status: 404, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request took too long to arrive.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Send the body as application/json.' },
  VALIDATION_ERROR: { status: 422, message: 'The request has invalid fields.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests. Try again later.' },
  HEADERS_TOO_LARGE: { status: 431, message: 'The request headers are too large.' },
  INTERNAL_ERROR: { status: 500, message: 'Something went wrong on our side.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable. Try again shortly.' },
} as const satisfies Record<string, ErrorDefinition>;

type CoreErrorCodes = typeof CORE_ERRORS;

/**
 * Every code, by name: the core's, and each module's, which its errors file adds to this type:
 *
 *   export const MFA_ERRORS = defineErrorCodes('mfa', { INVALID_CODE: { status: 400, message: '…' } });
 *   type MfaErrorCodes = typeof MFA_ERRORS;
 *   declare module '../errors.ts' {
 *     interface ErrorCodes extends MfaErrorCodes {}
 *   }
 */
export interface ErrorCodes extends CoreErrorCodes {}

export type ErrorCode = keyof ErrorCodes & string;

/** Every code declared so far, with the module that declared it (`http` for the core). */
const declared = new Map<string, ErrorDefinition & { readonly module: string }>(Object.entries(CORE_ERRORS).map(([code, definition]) => [code, { ...definition, module: 'http' }]));

/**
 * Declares a module's codes (at import of its errors file); returns them, for its module
 * definition's `errors`. A code is UPPER_SNAKE and owned by one module: declaring it again
 * elsewhere is a mistake, refused at start.
 */
export function defineErrorCodes<const T extends Record<string, ErrorDefinition>>(module: string, codes: T): T {
  for (const [code, definition] of Object.entries(codes)) {
    if (!/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/.test(code)) throw new Error(`error code "${code}" of the module "${module}" is not UPPER_SNAKE`);
    const owner = declared.get(code);
    if (owner !== undefined && owner.module !== module) throw new Error(`error code "${code}" is declared by both "${owner.module}" and "${module}"`);
    declared.set(code, { status: definition.status, message: definition.message, module });
  }
  return codes;
}

/** A declared code's status and message; a code no loaded module declared is a programming error. */
export function errorDefinition(code: ErrorCode): ErrorDefinition {
  const definition = declared.get(code);
  if (definition === undefined) throw new Error(`error code "${code}" is not declared: is its module's errors file imported by its module?`);
  return definition;
}

/** Every declared code, with its owner: the catalogue `docs/errors.md` is generated from. */
export function declaredErrorCodes(): ReadonlyMap<string, ErrorDefinition & { readonly module: string }> {
  return declared;
}

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
    super(options.message ?? errorDefinition(code).message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = options.status ?? errorDefinition(code).status;
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
  const body: ErrorBody = { error: code, message: message ?? errorDefinition(code).message };
  if (errors !== undefined) body.errors = [...errors];
  return body;
}
