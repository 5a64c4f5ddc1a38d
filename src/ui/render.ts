/**
 * Server-rendered pages: Eta templates in `templates/`, compiled once when the renderer is made
 * (a broken template fails start-up, not a request), every `<%= %>` HTML-escaped. Pages contain no
 * script and no inline style, so the strict Content-Security-Policy below holds for all of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { FastifyReply } from 'fastify';
import type { SessionSummary } from '../sessions/session.service.ts';
// The core build has no file-system lookups: templates are only what we load, by name.
import { Eta } from 'eta/core';

const TEMPLATES_DIR = join(import.meta.dirname, 'templates');
const LAYOUT = 'layout';

/** What every page gives the layout. */
interface PageFrame {
  title: string;
  /** Wider content column (the dashboard's session list). */
  isWide?: boolean;
  /** The widest column, for tables (the admin pages). */
  isFull?: boolean;
}

/** A moment as a `<time datetime>` value and as text. */
export interface TimeText {
  iso: string;
  text: string;
}

export function formatTime(epochMs: number): TimeText {
  const iso = new Date(epochMs).toISOString();
  return { iso, text: `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` };
}

export interface SessionItem {
  id: string;
  isCurrent: boolean;
  userAgent: string;
  ip: string;
  createdAt: TimeText;
  lastSeenAt: TimeText;
  expiresAt: TimeText;
}

/** A person's sessions for a page: the one this browser uses (`currentId`) first, then the most recently used. */
export function toSessionItems(list: readonly SessionSummary[], currentId: string | null): SessionItem[] {
  return [...list]
    .sort((a, b) => Number(b.id === currentId) - Number(a.id === currentId) || b.lastSeenAt - a.lastSeenAt)
    .map((s) => ({
      id: s.id,
      isCurrent: s.id === currentId,
      userAgent: s.userAgent ?? 'Unknown device',
      ip: s.ip ?? 'Unknown',
      createdAt: formatTime(s.createdAt),
      lastSeenAt: formatTime(s.lastSeenAt),
      expiresAt: formatTime(s.expiresAt),
    }));
}

/** A message at the top of a page: what a form just did, or why it did not. */
export interface PageAlert {
  isError: boolean;
  code: string;
  message: string;
}

/** What every admin page gives `admin-header.eta`. */
interface AdminFrame {
  section: 'users' | 'events';
  alerts: PageAlert[];
}

export interface AdminUserItem {
  href: string;
  name: string;
  email: string;
  roles: string[];
  isDisabled: boolean;
  createdAt: TimeText;
}

export interface AdminEventItem {
  createdAt: TimeText;
  type: string;
  /** The account's id with a link to it; null when the event has none. */
  user: { id: string; href: string } | null;
  actor: { id: string; href: string } | null;
  email: string | null;
  ip: string | null;
  userAgent: string | null;
  reason: string | null;
  /** JSON text. */
  details: string | null;
}

/** Each page's template name and the data it reads. */
export interface PageModels {
  home: { isSignedIn: boolean };
  signin: {
    csrfToken: string;
    callbackUrl: string;
    error: { code: string; message: string } | null;
    signedInAs: string | null;
    /** ALLOW_SIGNUP: the page links to `/auth/signup`. */
    isSignupAllowed: boolean;
    /** A "Sign in with …" button each. */
    providers: Array<{ id: string; name: string }>;
  };
  signout: { csrfToken: string };
  error: { code: string; heading: string; message: string };
  dashboard: {
    csrfToken: string;
    user: { name: string; email: string; roles: string[] };
    sessions: SessionItem[];
    hasOtherSessions: boolean;
    notice: { code: string; message: string } | null;
    isAdmin: boolean;
    /** What a form just did (`?notice=`): a password changed. */
    confirmation: string | null;
    /** For the change-password form's hint. */
    minPasswordLength: number;
    /** Each configured provider, with the user's identity there if linked. */
    providers: Array<{ id: string; name: string; linked: { email: string | null } | null }>;
  };
  'admin-users': AdminFrame & {
    query: string;
    users: AdminUserItem[];
    nextHref: string | null;
    /** Set on every page but the first. */
    firstHref: string | null;
  };
  'admin-user': AdminFrame & {
    csrfToken: string;
    user: {
      id: string;
      name: string;
      email: string;
      roles: string[];
      isEmailVerified: boolean;
      disabledAt: TimeText | null;
      createdAt: TimeText;
      updatedAt: TimeText;
    };
    /** The admin is looking at their own account. */
    isSelf: boolean;
    sessions: SessionItem[];
    eventsHref: string;
    actions: { roles: string; disable: string; enable: string; endSession: string; endAllSessions: string };
  };
  'admin-events': AdminFrame & {
    filter: { userId: string; type: string };
    types: readonly string[];
    isFiltered: boolean;
    events: AdminEventItem[];
    nextHref: string | null;
    firstHref: string | null;
  };
}

export type PageName = keyof PageModels;

export interface PageRenderer {
  render<P extends PageName>(page: P, model: PageModels[P] & PageFrame): string;
}

/** Loads and compiles every `*.eta` file in `dir`; a page template names its layout itself. */
export function createPageRenderer(dir: string = TEMPLATES_DIR): PageRenderer {
  const eta = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });
  const names = readdirSync(dir).filter((file) => file.endsWith('.eta'));
  for (const file of names) eta.loadTemplate(basename(file, '.eta'), readFileSync(join(dir, file), 'utf8'));
  if (!names.includes(`${LAYOUT}.eta`)) throw new Error(`UI templates: ${LAYOUT}.eta is missing in ${dir}`);

  return {
    render(page, model) {
      return eta.render(page, { isWide: false, isFull: false, ...model });
    },
  };
}

/**
 * Headers of every HTML page. No script may run and styles come only from our stylesheet, so an
 * injected tag can do nothing; no page may be framed (clickjacking of the sign-in and session
 * buttons); forms may post only to us; pages carry personal data and CSRF tokens, so none is cached.
 * Referrer-Policy is `same-origin`, not `no-referrer`: under `no-referrer` browsers send
 * `Origin: null` on a page's form posts, which the CSRF origin check rightly refuses. Other sites
 * still get no referrer at all.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = pageHeaders([]);

/**
 * The page headers, with form posts also allowed to end at `formActionOrigins`: a "Sign in with …"
 * form posts to us and is redirected to the provider, and browsers apply `form-action` to that
 * redirect too. Only the sign-in and dashboard pages, which hold those forms, widen it.
 */
function pageHeaders(formActionOrigins: readonly string[]): Readonly<Record<string, string>> {
  return Object.freeze({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': [
      "default-src 'none'",
      "script-src 'none'",
      "style-src 'self'",
      "img-src 'self'",
      "object-src 'none'",
      ["form-action 'self'", ...formActionOrigins].join(' '),
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });
}

/** Built once per set of provider origins (they come from the configuration; there are few). */
const headersByOrigins = new Map<string, Readonly<Record<string, string>>>();

function headersWithFormActions(origins: readonly string[]): Readonly<Record<string, string>> {
  const key = origins.join(' ');
  let headers = headersByOrigins.get(key);
  if (headers === undefined) {
    headers = pageHeaders(origins);
    headersByOrigins.set(key, headers);
  }
  return headers;
}

export function sendPage(reply: FastifyReply, html: string, status = 200, options: { formActionOrigins?: readonly string[] } = {}): FastifyReply {
  const origins = options.formActionOrigins ?? [];
  const headers = origins.length === 0 ? PAGE_HEADERS : headersWithFormActions(origins);
  return reply.code(status).headers(headers).send(html);
}
