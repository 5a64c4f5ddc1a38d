/**
 * Verifying Gatehouse webhooks in a receiver, following the Standard Webhooks specification
 * (https://www.standardwebhooks.com): Web Crypto only (no dependency), so it runs in Node 20+,
 * browsers, workers and edge runtimes.
 *
 *   import { verifyWebhook } from 'gatehouse-client/webhooks';
 *   const event = await verifyWebhook(rawBody, request.headers, process.env.GATEHOUSE_WEBHOOK_SECRET);
 *   // event: { type: 'user.created', timestamp: '2026-…Z', data: { userId: '…' } }
 *
 * Pass the body exactly as received (the raw text, before any JSON parsing). The signature is
 * HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>` with the secret's bytes (`whsec_`
 * then base64), in base64, as `v1,<signature>`; `webhook-signature` may hold several,
 * space-separated (during a secret rotation Gatehouse signs with both): one match is enough.
 * Timestamps more than 5 minutes away from now are refused (replay protection); dedupe on
 * `webhook-id`, which stays the same when a webhook is retried.
 */

export interface WebhookEvent<Data = Record<string, unknown>> {
  type: string;
  /** ISO 8601: when the event happened. */
  timestamp: string;
  data: Data;
}

/** Headers as a `Headers` object, or a plain object (Node's `IncomingHttpHeaders`, any case). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyWebhookOptions {
  /** How far the timestamp may be from now, in seconds. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The current time in milliseconds since the epoch (tests). Default `Date.now()`. */
  now?: number;
}

export type WebhookVerificationReason = 'MISSING_HEADERS' | 'INVALID_TIMESTAMP' | 'TIMESTAMP_TOO_OLD' | 'TIMESTAMP_TOO_NEW' | 'INVALID_SIGNATURE' | 'INVALID_PAYLOAD';

/** The webhook is not one signed with this secret, or is stale, or not Gatehouse's JSON. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

const SECRET_PREFIX = 'whsec_';
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;
const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(' ') : (value as string | undefined);
  }
  return undefined;
}

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Equal strings, in time that depends only on their length. */
function constantTimeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  let difference = left.length ^ right.length;
  for (let i = 0; i < left.length; i++) difference |= left[i]! ^ (right[i % Math.max(1, right.length)] ?? 0);
  return difference === 0;
}

/** The secret's key bytes: `whsec_` + base64 (the prefix is optional, as the specification allows). */
function secretKey(secret: string): Uint8Array<ArrayBuffer> {
  if (typeof secret !== 'string' || secret === '') throw new TypeError('verifyWebhook: the secret is required');
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  let key: Uint8Array<ArrayBuffer>;
  try {
    key = base64ToBytes(encoded);
  } catch {
    throw new TypeError('verifyWebhook: the secret is not whsec_ followed by base64');
  }
  if (key.length === 0) throw new TypeError('verifyWebhook: the secret is empty');
  return key;
}

/** `v1,<base64 HMAC-SHA256>` of `<id>.<timestamp>.<payload>`. */
export async function signWebhook(secret: string, id: string, timestamp: number | string, payload: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', secretKey(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const signature = await crypto.subtle.sign('HMAC', key, encoder.encode(`${id}.${timestamp}.${payload}`));
  return `v1,${bytesToBase64(new Uint8Array(signature))}`;
}

/**
 * Checks a webhook's signature and timestamp and returns its event; throws a
 * `WebhookVerificationError` (with a `reason`) when it does not verify, and a `TypeError` for a
 * malformed secret.
 */
export async function verifyWebhook<Data = Record<string, unknown>>(payload: string, headers: WebhookHeaders, secret: string, options: VerifyWebhookOptions = {}): Promise<WebhookEvent<Data>> {
  if (typeof payload !== 'string') throw new TypeError('verifyWebhook: pass the raw body as a string, exactly as received');
  const id = header(headers, 'webhook-id');
  const timestampText = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures) throw new WebhookVerificationError('MISSING_HEADERS', 'The webhook-id, webhook-timestamp and webhook-signature headers are required');
  if (!/^\d{1,12}$/.test(timestampText.trim())) throw new WebhookVerificationError('INVALID_TIMESTAMP', 'The webhook-timestamp header is not a number of seconds');
  const timestamp = Number(timestampText.trim());
  const now = options.now ?? Date.now();
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  // NaN would make both comparisons false and switch the replay check off: fail closed instead.
  if (!Number.isFinite(now)) throw new TypeError('verifyWebhook: `now` must be a finite number of milliseconds');
  if (typeof tolerance !== 'number' || Number.isNaN(tolerance) || tolerance < 0) throw new TypeError('verifyWebhook: `toleranceSeconds` must be a number of seconds, 0 or more');
  const nowSeconds = Math.floor(now / 1000);
  if (nowSeconds - timestamp > tolerance) throw new WebhookVerificationError('TIMESTAMP_TOO_OLD', 'The webhook timestamp is too old');
  if (timestamp - nowSeconds > tolerance) throw new WebhookVerificationError('TIMESTAMP_TOO_NEW', 'The webhook timestamp is too far in the future');

  const expected = (await signWebhook(secret, id, timestamp, payload)).slice('v1,'.length);
  let isMatch = false;
  for (const versioned of signatures.split(' ')) {
    const comma = versioned.indexOf(',');
    if (comma < 0 || versioned.slice(0, comma) !== 'v1') continue;
    // Every candidate is compared (no early exit), each in constant time.
    if (constantTimeEqual(versioned.slice(comma + 1), expected)) isMatch = true;
  }
  if (!isMatch) throw new WebhookVerificationError('INVALID_SIGNATURE', 'No signature matches this secret');

  let event: unknown;
  try {
    event = JSON.parse(payload);
  } catch {
    throw new WebhookVerificationError('INVALID_PAYLOAD', 'The webhook body is not JSON');
  }
  const value = event as Partial<WebhookEvent<Data>> | null;
  if (value === null || typeof value !== 'object' || typeof value.type !== 'string' || typeof value.timestamp !== 'string' || value.data === null || typeof value.data !== 'object') {
    throw new WebhookVerificationError('INVALID_PAYLOAD', 'The webhook body is not {type, timestamp, data}');
  }
  return value as WebhookEvent<Data>;
}
