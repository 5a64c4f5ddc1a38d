/**
 * Server-rendered pages: Eta templates, each compiled once when first rendered (every template's
 * compiling is checked by a test), every `<%= %>` HTML-escaped. This base knows no feature: it holds
 * the layout and the generic error page (`templates/`), and each feature hands it the paths of its
 * own page templates together with the type of the data each one reads. Pages contain no inline
 * style and no script of their own making, so the strict Content-Security-Policy below holds for
 * all of them. Two kinds of script are allowed: a module's same-origin file under a nonce (a
 * passkey's ceremony), and one small inline script of ours, `password-field.js` (show the
 * password, Caps Lock hint), allowed by its SHA-256: the layout adds it to a page that has a
 * `data-password-field`, and `sendPage` allows it on a page that carries it, so the two never disagree.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { FastifyReply } from 'fastify';
import type { PageContext } from './page-context.ts';
// The core build has no file-system lookups: templates are only what we load, by name.
import { Eta } from 'eta/core';
import { compileOnFirstUse } from './eta-on-first-use.ts';
import { mergeCatalogs, readMessages } from '../i18n/catalog.ts';
import { DEFAULT_LOCALE } from '../i18n/locales.ts';
import { createTranslations, type Translator } from '../i18n/translator.ts';
import { DEFAULT_BRAND, type Brand } from './brand.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

const BASE_TEMPLATES_DIR = join(import.meta.dirname, 'templates');

/**
 * The password fields' script (show/hide, Caps Lock), inlined as is and allowed by its hash, which
 * is computed here from the very bytes the pages carry. Progressive enhancement: the forms work without it.
 */
export const PASSWORD_FIELD_SCRIPT: { readonly source: string; readonly hash: string } = (() => {
  const source = readFileSync(join(import.meta.dirname, 'password-field.js'), 'utf8').trim();
  // Inlined between <script> tags: neither may appear inside it.
  if (/<\/script|<!--/i.test(source)) throw new Error('password-field.js must not contain </script or <!--');
  return Object.freeze({ source, hash: `'sha256-${createHash('sha256').update(source, 'utf8').digest('base64')}'` });
})();

/** The base's own texts (layout, error page), in every language: keys `web.*`. */
export const WEB_MESSAGES = readMessages(join(import.meta.dirname, 'messages'));

/**
 * A page's language and look: its texts (`t`, `html`), the language switcher's links (i18n module)
 * and the deployment's brand (set on each browser request by the branding module).
 */
export interface PageLanguage extends Translator {
  readonly links: ReadonlyArray<{ locale: string; name: string; href: string; isCurrent: boolean }>;
  brand: Brand;
}

/** Pages rendered without a request's language (none given): English, with the base's texts only. */
export const ENGLISH_PAGE: PageLanguage = { ...createTranslations(mergeCatalogs([{ name: 'web', messages: WEB_MESSAGES }])).translator(DEFAULT_LOCALE), links: [], brand: DEFAULT_BRAND };

/**
 * What every page gives the layout (`templates/layout.eta`, which each page template names
 * itself). The request's part — its language and brand (`it.i18n`), CSRF token (`it.csrfToken`)
 * and script nonce (`it.scriptNonce`) — is not in it: the renderer takes those from the page
 * context (web/page-context.ts), so a page renders with its name and model only.
 */
export interface PageFrame {
  title: string;
  /** Wider content column (the dashboard's session list). */
  isWide?: boolean;
  /** The widest column, for tables (the admin pages). */
  isFull?: boolean;
  /** Same-origin scripts the page loads, under the response's nonce (the page context's). */
  scripts?: readonly string[];
}

/** What a page template reads from the page context rather than from its model. */
type ContextField = 'i18n' | 'csrfToken' | 'scriptNonce';

/** The pages of the base itself, which every renderer can render besides a feature's own. */
export interface BasePages {
  error: { code: string | null; heading: string; message: string };
}

/** A page's model: what its template reads (but the context's fields), and the frame's. */
export type PageModel<Pages extends object, P extends keyof (Pages & BasePages)> = Omit<(Pages & BasePages)[P], ContextField> & PageFrame;

/** How a page is sent: its status (200), and the origins its forms' redirects may end at. */
export interface SendOptions {
  status?: number;
  formActionOrigins?: readonly string[];
  /** The page's URL holds a live token (a mailed link's): no Referer may carry it, not even to our own stylesheet. */
  urlHoldsToken?: boolean;
}

/** Renders the pages of `Pages` (template name -> the data it reads) and those of the base. */
export interface PageRenderer<Pages extends object> {
  /** The page's HTML in `context` (a section's, or a page another framework sends). */
  html<P extends keyof (Pages & BasePages) & string>(context: PageContext, page: P, model: PageModel<Pages, P>): string;
  /** Renders the page in the reply's request context and sends it with the page headers (its scripts under the context's nonce). */
  send<P extends keyof (Pages & BasePages) & string>(reply: FastifyReply, page: P, model: PageModel<Pages, P>, options?: SendOptions): FastifyReply;
}

/** The `*.eta` files in `dir`: a feature's folder of page templates. */
export function templatesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.eta'))
    .map((file) => join(dir, file));
}

/**
 * Renders the layout, the base's pages and the page templates at `files` (each named by its file
 * name without `.eta`, as `render` and `include` name it). A name the base or another file already
 * uses stops the start. Each template is read and compiled when a page first needs it, not here:
 * a renderer is made for every module with pages, most pages are never shown by a given instance,
 * and their compiled functions would stay resident. That every template compiles is checked by
 * src/web/templates.test.ts, so a broken one still fails CI.
 */
export function createPageRenderer<Pages extends object>(files: readonly string[]): PageRenderer<Pages> {
  const eta = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });
  const paths = new Map<string, string>();
  for (const file of [...templatesIn(BASE_TEMPLATES_DIR), ...files]) {
    const name = basename(file, '.eta');
    if (paths.has(name)) throw new Error(`Page templates: two templates are named ${name} (${file})`);
    paths.set(name, file);
  }
  compileOnFirstUse(eta, paths);
  const html = (context: PageContext, page: string, model: object): string => eta.render(page, pageData(context, model));
  return {
    html,
    send(reply, page, model, options = {}) {
      const context = reply.page;
      const body = html(context, page, model);
      const scriptNonce = (model.scripts?.length ?? 0) > 0 ? context.scriptNonce : undefined;
      return sendPage(reply, body, options.status ?? 200, { formActionOrigins: options.formActionOrigins, scriptNonce, urlHoldsToken: options.urlHoldsToken });
    },
  };
}

/**
 * A template's data: the model, with the context's parts. Eta hands every partial and the layout
 * a copy (`{ ...it }`), which reads each property: the CSRF token is therefore a value that is
 * made only when a template prints it (`<%= it.csrfToken %>` turns it into text), so a page that
 * shows no form issues none and sets no cookie.
 */
function pageData(context: PageContext, model: object): object {
  return {
    isWide: false,
    isFull: false,
    ...model,
    passwordFieldScript: PASSWORD_FIELD_SCRIPT.source,
    paths: HUB_PAGES,
    i18n: context.i18n,
    notices: context.notices,
    csrfToken: new PrintedLater(() => context.csrfToken),
    get scriptNonce() {
      return context.scriptNonce;
    },
  };
}

/** Text computed when it is printed (`String(value)`, as the templates' `<%= %>` does), not before. */
class PrintedLater {
  readonly #make: () => string;
  constructor(make: () => string) {
    this.#make = make;
  }
  toString(): string {
    return this.#make();
  }
}

/**
 * Headers of every HTML page. No script may run (but ours, below) and styles come only from our
 * stylesheet, so an injected tag can do nothing; no page may be framed (clickjacking of the sign-in and session
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
function pageHeaders(formActionOrigins: readonly string[], scriptNonce?: string, scriptHashes: readonly string[] = []): Readonly<Record<string, string>> {
  const scriptSources = [...(scriptNonce === undefined ? [] : [`'nonce-${scriptNonce}'`]), ...scriptHashes];
  return Object.freeze({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': [
      "default-src 'none'",
      // Pages run no script, except a page that loads one of ours (a passkey's ceremony) with
      // this response's nonce (that script may call our own API, nothing else), and our inline
      // password-field script, by its hash (it calls nothing).
      `script-src ${scriptSources.length === 0 ? "'none'" : scriptSources.join(' ')}`,
      ...(scriptNonce === undefined ? [] : ["connect-src 'self'"]),
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

/** Built once per set of provider origins (they come from the configuration; there are few) and scripts. */
const headersByOrigins = new Map<string, Readonly<Record<string, string>>>();

function cachedHeaders(origins: readonly string[], scriptHashes: readonly string[]): Readonly<Record<string, string>> {
  if (origins.length === 0 && scriptHashes.length === 0) return PAGE_HEADERS;
  const key = `${origins.join(' ')}|${scriptHashes.join(' ')}`;
  let headers = headersByOrigins.get(key);
  if (headers === undefined) {
    headers = pageHeaders(origins, undefined, scriptHashes);
    headersByOrigins.set(key, headers);
  }
  return headers;
}

/** The hashes of our inline scripts that `html` carries (the layout adds the password fields' one). */
function inlineScriptHashes(html: string | undefined): readonly string[] {
  return html !== undefined && html.includes(PASSWORD_FIELD_SCRIPT.source) ? [PASSWORD_FIELD_SCRIPT.hash] : [];
}

export function sendPage(reply: FastifyReply, html: string, status = 200, options: { formActionOrigins?: readonly string[]; scriptNonce?: string; urlHoldsToken?: boolean } = {}): FastifyReply {
  const headers = pageResponseHeaders({ ...options, html });
  return reply
    .code(status)
    .headers(options.urlHoldsToken === true ? { ...headers, 'referrer-policy': 'no-referrer' } : headers)
    .send(html);
}

/**
 * The page headers for a response that is not sent through `sendPage` (a page another framework
 * renders, or one with headers of its own): give it the `html` it sends, so that the script it
 * carries is allowed.
 */
export function pageResponseHeaders(options: { formActionOrigins?: readonly string[]; scriptNonce?: string; html?: string } = {}): Readonly<Record<string, string>> {
  const origins = options.formActionOrigins ?? [];
  const hashes = inlineScriptHashes(options.html);
  if (options.scriptNonce !== undefined) return pageHeaders(origins, options.scriptNonce, hashes);
  return cachedHeaders(origins, hashes);
}

/**
 * The CSP source that lets a form's redirect end at `url`: its origin, or for a custom scheme (a
 * native app's `com.example.app:/callback`) the scheme. Null for what is no URL.
 */
export function formActionSource(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.protocol === 'http:' || parsed.protocol === 'https:') return parsed.origin;
  return /^[a-z][a-z0-9+.-]*:$/i.test(parsed.protocol) ? parsed.protocol : null;
}

/** A fresh CSP nonce for one response that loads a script (128 bits). */
export function createScriptNonce(): string {
  return randomBytes(16).toString('base64');
}
