/**
 * What a person typed into a hosted form, kept across the redirect that sends a refused form back to
 * its page (`formErrorPage`), so that they fix a mistake instead of typing everything again.
 *
 * The values never go in the URL (which ends up in logs, history and Referer headers): they travel
 * in a short-lived cookie, `gatehouse.form` (`__Host-gatehouse.form` on https: no sibling subdomain
 * can plant one), HttpOnly, SameSite=Lax, Path=/, five minutes. It is signed with
 * the cookie key (@fastify/cookie, HMAC-SHA256 under a key derived from AUTH_SECRET) and carries its
 * own expiry and the page it belongs to, so a forged, altered, stale or misplaced one is ignored.
 * The page that shows the form reads it once and clears it.
 *
 * Only the fields a route names are kept, and never one whose name says it is a secret (a password,
 * a token, a code): a cookie is stored by the browser, and a shared computer must not give back a
 * password. Values are cut to size and an oversized cookie is not set at all.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * With `formErrorPage`: the non-secret fields (`email`, `name`) the page fills in again when a
     * form post comes back with an error (through the form-values cookie, never the URL).
     */
    formKeptFields?: readonly string[];
  }
}

type CookieConfig = Pick<Config, 'isSecureOrigin'>;

/** `/`, as `__Host-` requires; the payload names the one page it is for. */
export const FORM_VALUES_PATH = '/';
/** Long enough to read the message and submit again; short enough not to linger on a shared computer. */
export const FORM_VALUES_TTL_SECONDS = 5 * 60;
/** A kept value is cut to this many characters (an e-mail address is at most 254, a name 200). */
export const MAX_KEPT_VALUE_LENGTH = 320;
/** A cookie larger than this is neither set nor read. */
export const MAX_FORM_VALUES_COOKIE_LENGTH = 2048;
const MAX_FIELDS = 8;

/** Names that never go in the cookie, whatever a route lists: secrets have no business there. */
const SECRET_FIELD = /pass|token|secret|code|otp|csrf|key/i;
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;

export function formValuesCookieName(config: CookieConfig): string {
  // `__Host-`: set over https by this host itself, for Path=/ and no Domain, so a sibling
  // subdomain cannot plant values in someone's sign-in form.
  return `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.form`;
}

function cookieOptions(config: CookieConfig) {
  return { httpOnly: true, sameSite: 'lax', path: FORM_VALUES_PATH, secure: config.isSecureOrigin } as const;
}

/** A field a route may keep: a plain name that names no secret. */
export function isKeepableField(name: string): boolean {
  return FIELD_NAME.test(name) && !SECRET_FIELD.test(name);
}

/** What the page gets back: the values typed, and the fields the server refused (VALIDATION_ERROR's `errors[].field`). */
export interface KeptForm {
  values: Readonly<Record<string, string>>;
  invalidFields: readonly string[];
}

const NOTHING_KEPT: KeptForm = Object.freeze({ values: Object.freeze({}), invalidFields: Object.freeze([]) });

interface Payload {
  /** The page the values belong to. */
  p: string;
  /** Expiry, in seconds since the epoch. */
  x: number;
  v: Record<string, string>;
  i: string[];
}

/** At most `max` characters (code points, so a pair is never split). */
const cut = (text: string, max: number) => (text.length <= max ? text : Array.from(text).slice(0, max).join(''));

/**
 * Keeps `fields` of the request's form body for `page` (the error redirect's target). Fields that
 * are missing, not text, or secret are skipped; when nothing is left, no cookie is set.
 */
export function keepFormValues(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { page: string; fields: readonly string[]; invalidFields?: readonly string[]; config: CookieConfig; nowMs?: number },
): void {
  const body = request.body;
  if (body === null || typeof body !== 'object') return;
  const values: Record<string, string> = {};
  for (const field of options.fields.slice(0, MAX_FIELDS)) {
    if (!isKeepableField(field)) continue;
    const value = Object.hasOwn(body, field) ? (body as Record<string, unknown>)[field] : undefined;
    if (typeof value === 'string' && value !== '') values[field] = cut(value, MAX_KEPT_VALUE_LENGTH);
  }
  const invalid = [...new Set(options.invalidFields ?? [])].filter((field) => FIELD_NAME.test(field)).slice(0, MAX_FIELDS);
  if (Object.keys(values).length === 0 && invalid.length === 0) return;
  const payload: Payload = { p: options.page, x: Math.floor((options.nowMs ?? Date.now()) / 1000) + FORM_VALUES_TTL_SECONDS, v: values, i: invalid };
  const encoded = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  // The signature adds ~45 characters; keep well inside what browsers store.
  if (encoded.length > MAX_FORM_VALUES_COOKIE_LENGTH - 64) return;
  void reply.setCookie(formValuesCookieName(options.config), encoded, { ...cookieOptions(options.config), maxAge: FORM_VALUES_TTL_SECONDS, signed: true });
}

/**
 * The values kept for `page`, read once: the cookie is cleared whenever it is there. A cookie that
 * is unsigned, altered, expired, oversized, malformed or kept for another page gives nothing.
 */
export function takeFormValues(request: FastifyRequest, reply: FastifyReply, options: { page: string; config: CookieConfig; nowMs?: number }): KeptForm {
  const name = formValuesCookieName(options.config);
  const raw = request.cookies[name];
  if (raw === undefined) return NOTHING_KEPT;
  void reply.clearCookie(name, cookieOptions(options.config));
  if (raw.length > MAX_FORM_VALUES_COOKIE_LENGTH) return NOTHING_KEPT;
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid || unsigned.value === null) return NOTHING_KEPT;
  const payload = parsePayload(unsigned.value);
  if (payload === null || payload.p !== options.page || payload.x * 1000 <= (options.nowMs ?? Date.now())) return NOTHING_KEPT;
  return { values: payload.v, invalidFields: payload.i };
}

function parsePayload(encoded: string): Payload | null {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object') return null;
  const { p, x, v, i } = value as Record<string, unknown>;
  if (typeof p !== 'string' || typeof x !== 'number' || v === null || typeof v !== 'object' || Array.isArray(v) || !Array.isArray(i)) return null;
  const values: Record<string, string> = {};
  for (const [field, text] of Object.entries(v).slice(0, MAX_FIELDS)) {
    // Signed by us, but checked as if it were not: the page only ever gets plain text of a sane size.
    if (isKeepableField(field) && typeof text === 'string') values[field] = cut(text, MAX_KEPT_VALUE_LENGTH);
  }
  const invalid = i.filter((field): field is string => typeof field === 'string' && FIELD_NAME.test(field)).slice(0, MAX_FIELDS);
  return { p, x, v: values, i: invalid };
}
