/**
 * `callbackUrl` values are attacker-controlled: only a path on our own origin is honoured. The
 * value is resolved the way a browser would (backslashes, `//host`, encoded or not) and accepted
 * only if it stays on `origin`; anything else becomes `fallback`.
 */
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
export const DEFAULT_CALLBACK_PATH = '/dashboard';

/**
 * The landing path after a sign-in: the requested `callbackUrl` when it is a path of ours,
 * `/dashboard` when none was given, and `/` (the public home) for anything refused, so a hostile
 * value never lands anywhere more interesting than the front page.
 */
export function toCallbackPath(value: unknown, origin: string): string {
  if (value === undefined || value === '') return DEFAULT_CALLBACK_PATH;
  return toSafeLocalPath(value, origin, '/');
}
