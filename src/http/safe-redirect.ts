/**
 * `callbackUrl` values are attacker-controlled. This honours only a path on our own origin: the
 * value is resolved the way a browser would (backslashes, `//host`, encoded or not) and accepted
 * only if it stays on `origin`; anything else becomes `fallback`. Sign-in's landing place also
 * honours the TRUSTED_ORIGINS (`toCallbackUrl`); this is for what must stay on our origin.
 */
import { HUB_PAGES } from './hub-pages.ts';
export function toSafeLocalPath(value: unknown, origin: string, fallback = '/'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return fallback;
  // Control characters and whitespace are stripped by browsers before parsing; refuse them outright.
  if (/[\u0000-\u0020\u007f-\u009f]/.test(value)) return fallback;
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return fallback;
  let resolved: URL;
  try {
    resolved = new URL(value, origin);
  } catch {
    return fallback;
  }
  if (resolved.origin !== new URL(origin).origin) return fallback;
  const path = `${resolved.pathname}${resolved.search}${resolved.hash}`;
  // Dot segments can collapse into a protocol-relative URL: `/.//evil.example` -> `//evil.example`.
  if (path.startsWith('//') || path.startsWith('/\\')) return fallback;
  return path;
}

/** Where a browser lands after signing in when it asked for nowhere in particular. */
export const DEFAULT_CALLBACK_PATH = HUB_PAGES.dashboard;

/** The longest `callbackUrl` honoured, as written and as sent on (the routes' schemas allow no more). */
const MAX_CALLBACK_LENGTH = 2048;

/**
 * `value` as an absolute URL on one of `trustedOrigins` (TRUSTED_ORIGINS, exact origins as
 * `parseTrustedOrigins` keeps them), serialised as browsers would read it; null for anything else.
 * What a browser would resolve to another host must never pass, so the value is refused before
 * parsing when it holds anything a browser rewrites or that hides where it goes, and after parsing
 * (with the WHATWG parser, the browsers' own) its origin must be listed exactly:
 * - control characters and whitespace (browsers strip or drop them: `https://app.example.com\tx`);
 * - `\` anywhere (browsers read it as `/` in http(s) URLs: `https://app.example.com\@evil.example`);
 * - anything but `http://` or `https://` written out (`https:app.example.com`, `https:/x` and
 *   `//x` all resolve somewhere, and `javascript:` must never);
 * - an authority other than a plain host and port: no userinfo (`https://app.example.com@evil.example`
 *   goes to evil.example), no percent-encoding (`app.example.com%2F@evil`), nothing outside ASCII
 *   (an IDN lookalike, a fullwidth dot that IDNA maps onto a `.`): IDNs come in their `xn--` form.
 * Case, a default port (`:443`) and dot segments are resolved as browsers do; another scheme or
 * port, or a trailing dot (`app.example.com.`), is another origin, so it is refused.
 */
export function toTrustedOriginUrl(value: unknown, trustedOrigins: readonly string[]): string | null {
  if (trustedOrigins.length === 0 || typeof value !== 'string' || value.length > MAX_CALLBACK_LENGTH) return null;
  if (/[\u0000-\u0020\u007f-\u009f]/.test(value) || value.includes('\\')) return null;
  const authority = /^https?:\/\/([^/?#]*)/i.exec(value)?.[1];
  if (authority === undefined || !/^[A-Za-z0-9._\-[\]:]+$/.test(authority)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.username !== '' || url.password !== '' || !trustedOrigins.includes(url.origin)) return null;
  // Serialised (percent-encoded), it must still fit where it travels next: the second-factor page's query and forms.
  return url.href.length <= MAX_CALLBACK_LENGTH ? url.href : null;
}

/** What judging a `callbackUrl` needs: our own origin and the TRUSTED_ORIGINS (the `Config` has both). */
export interface CallbackPolicy {
  readonly authUrl: string;
  readonly trustedOrigins: readonly string[];
}

/**
 * The landing place after a sign-in: the requested `callbackUrl` when it is a path of ours or an
 * absolute URL on a trusted origin (see `toTrustedOriginUrl`), `/dashboard` when none was given,
 * and `/` (the public home) for anything refused, so a hostile value never lands anywhere more
 * interesting than the front page.
 */
export function toCallbackUrl(value: unknown, policy: CallbackPolicy): string {
  if (value === undefined || value === '') return DEFAULT_CALLBACK_PATH;
  return toTrustedOriginUrl(value, policy.trustedOrigins) ?? toSafeLocalPath(value, policy.authUrl, '/');
}

/**
 * What a page's `form-action` must add so that its form's redirect to `callbackUrl` is allowed:
 * the one trusted origin it names, or nothing for a path of ours (`'self'` covers it). Judged again
 * here, so a value that did not come through `toCallbackUrl` can never widen the policy.
 */
export function callbackFormActions(callbackUrl: string, policy: CallbackPolicy): string[] {
  const trusted = toTrustedOriginUrl(callbackUrl, policy.trustedOrigins);
  return trusted === null ? [] : [new URL(trusted).origin];
}
