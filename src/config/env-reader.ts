/** The environment reader every config section uses, and the small types and checks they share. */
import { isIPv4 } from 'node:net';

export type Env = Readonly<Record<string, string | undefined>>;

/** A rate limit: at most `points` in a window of `durationSeconds` (env syntax `60/1m`). */
export interface RateLimit {
  readonly points: number;
  readonly durationSeconds: number;
}

export const HOSTNAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/;

/**
 * True for a relay on this machine: `localhost`, 127.0.0.0/8 or ::1, as written (never resolved,
 * so a DNS answer cannot make a remote host look local). Only these may be reached without TLS.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (bare === 'localhost' || bare === '::1' || bare === '0:0:0:0:0:0:0:1') return true;
  return isIPv4(bare) && bare.startsWith('127.');
}

/** Credentials, a query or a fragment: none belongs in a base URL. */
export function hasExtraUrlParts(url: URL): boolean {
  return url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '';
}

/** The origin and path, without a trailing slash. */
export function toBaseUrl(url: URL): string {
  return url.origin + url.pathname.replace(/\/+$/, '');
}

/** Reads typed values from the environment, collecting problems instead of throwing at the first. */
export class EnvReader {
  readonly #env: Env;
  readonly #problems: string[];
  constructor(env: Env, problems: string[]) {
    this.#env = env;
    this.#problems = problems;
  }

  /** A set, non-blank value exactly as given (secrets may begin or end with a space). */
  raw(name: string): string | undefined {
    const value = this.#env[name];
    return value === undefined || value.trim() === '' ? undefined : value;
  }

  /** A set, non-blank value, trimmed; blank counts as unset. */
  string(name: string): string | undefined {
    const value = this.#env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  /** `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`). */
  boolean(name: string, fallback: boolean): boolean {
    const value = this.string(name)?.toLowerCase();
    if (value === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(value)) return true;
    if (['false', '0', 'no', 'off'].includes(value)) return false;
    this.#problems.push(`${name} must be true or false (got "${value}")`);
    return fallback;
  }

  oneOf<const T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.string(name);
    if (value === undefined) return fallback;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    this.#problems.push(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
    return fallback;
  }

  integer(name: string, fallback: number, range: { min: number; max: number }): number {
    const value = this.string(name);
    if (value === undefined) return fallback;
    const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(parsed) || parsed < range.min || parsed > range.max) {
      this.#problems.push(`${name} must be an integer from ${range.min} to ${range.max} (got "${value}")`);
      return fallback;
    }
    return parsed;
  }

  /** `points/duration`, e.g. `60/1m`, `5/15m`, `100/1h`: at most that many in each such window. */
  rateLimit(name: string, fallback: RateLimit): RateLimit {
    const value = this.string(name);
    if (value === undefined) return fallback;
    const match = /^(\d+)\s*\/\s*(\d+)\s*([smhd]?)$/.exec(value);
    const unitSeconds = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 } as const;
    const points = match ? Number(match[1]) : Number.NaN;
    const durationSeconds = match ? Number(match[2]) * unitSeconds[match[3] as keyof typeof unitSeconds] : Number.NaN;
    if (!(points >= 1 && points <= 1_000_000) || !(durationSeconds >= 1 && durationSeconds <= 7 * 86_400)) {
      this.#problems.push(`${name} must be a limit such as 60/1m or 5/15m: 1 to 1000000 per 1s to 7d (got "${value}")`);
      return fallback;
    }
    return { points, durationSeconds };
  }

  /** Seconds, or a number with a unit: `900`, `90s`, `15m`, `12h`, `30d`; `alternative` names what else the setting takes, for the problem's text. */
  duration(name: string, fallbackSeconds: number, alternative?: string): number {
    const value = this.string(name);
    if (value === undefined) return fallbackSeconds;
    const match = /^(\d+)\s*([smhd]?)$/.exec(value);
    const unitSeconds = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 } as const;
    const seconds = match ? Number(match[1]) * unitSeconds[match[2] as keyof typeof unitSeconds] : Number.NaN;
    if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > 366 * 86_400) {
      this.#problems.push(`${name} must be a duration from 1s to 366d such as 900, 15m, 12h or 30d${alternative === undefined ? '' : `, ${alternative}`} (got "${value}")`);
      return fallbackSeconds;
    }
    return seconds;
  }
}
