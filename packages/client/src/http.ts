/** Reading the service's answers: JSON bodies, tokens, sessions and its error values. */
import type { GatehouseError, Session, StoredTokens } from './types.ts';

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Not `instanceof`: a custom `fetch` may answer with another realm's or a polyfill's Response. */
export function isResponse(value: Response | GatehouseError): value is Response {
  return 'headers' in value;
}

export function isRequest(value: unknown): value is Request {
  return typeof Request !== 'undefined' && value instanceof Request;
}

export function urlOf(input: Request | string | URL): string {
  return isRequest(input) ? input.url : String(input);
}

export function isTokens(value: unknown): value is StoredTokens {
  return isRecord(value) && typeof value.accessToken === 'string' && typeof value.refreshToken === 'string' && typeof value.expiresAt === 'string';
}

/** Bodies that can be sent twice; a stream (or anything unknown) cannot. */
export function isReplayable(input: Request | string | URL, init: RequestInit): boolean {
  const body = init.body;
  if (body === undefined || body === null) return !(isRequest(input) && input.body !== null);
  return (
    typeof body === 'string' ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof URLSearchParams ||
    (typeof Blob !== 'undefined' && body instanceof Blob) ||
    (typeof FormData !== 'undefined' && body instanceof FormData)
  );
}

export async function isCsrfFailure(response: Response): Promise<boolean> {
  if (response.status !== 403) return false;
  const body = await readJson(response.clone());
  return isRecord(body) && body.error === 'CSRF_FAILED';
}

export async function readJson(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return null;
  }
}

export function tokensFrom(body: unknown): StoredTokens | null {
  if (!isRecord(body) || typeof body.token !== 'string' || typeof body.refreshToken !== 'string' || typeof body.expiresAt !== 'string') return null;
  return { accessToken: body.token, refreshToken: body.refreshToken, expiresAt: body.expiresAt };
}

export function sessionFrom(body: unknown): Session | null {
  if (!isRecord(body) || !isRecord(body.user) || !isRecord(body.session) || typeof body.user.id !== 'string' || typeof body.session.id !== 'string') return null;
  return body as unknown as Session;
}

export async function errorFrom(response: Response): Promise<GatehouseError> {
  return errorFromBody(response, await readJson(response));
}

export function errorFromBody(response: Response, body: unknown): GatehouseError {
  const error: GatehouseError =
    isRecord(body) && typeof body.error === 'string'
      ? { code: body.error, message: typeof body.message === 'string' ? body.message : body.error, status: response.status }
      : unexpected(response.status);
  const retryAfterSeconds = parseRetryAfter(response.headers.get('retry-after'));
  if (retryAfterSeconds !== undefined) error.retryAfterSeconds = retryAfterSeconds;
  if (isRecord(body) && Array.isArray(body.errors)) error.errors = body.errors as GatehouseError['errors'];
  return error;
}

export function unexpected(status: number): GatehouseError {
  return { code: 'UNEXPECTED_RESPONSE', message: `Gatehouse answered HTTP ${status} with a body this client does not understand.`, status };
}

export function networkError(cause: unknown): GatehouseError {
  return { code: 'NETWORK_ERROR', message: cause instanceof Error ? cause.message : 'The request failed.', cause };
}

/** `Retry-After` is seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
