/**
 * The request-level page context: what every page of one browser request shares — its language and
 * brand, this browser's CSRF token, the response's script nonce and the signed-in caller — set in
 * one place for the request (`reply.page`), so that a page renders with its name and model only
 * (`pages.send(reply, 'signin', model)`, web/render.ts).
 *
 * Each part is made when a page first reads it and then kept for the request: a page with no form
 * issues no CSRF token (and sets no cookie), one with no script makes no nonce. A request answered
 * before the browser routes' language hook ran (the access hook's refusals) negotiates its
 * language from the request alone and says which in `Content-Language`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createScriptNonce, ENGLISH_PAGE, type PageLanguage } from './render.ts';

/** Whom a page is shown to: the access hook's reading of the request (authorization/access.ts). */
export interface PageViewer {
  readonly userId: string;
  readonly sessionId: string;
}

export interface PageContext {
  /** The page's language and the deployment's brand (`it.i18n` in templates). */
  readonly i18n: PageLanguage;
  /** This browser's CSRF token for the page's forms (`it.csrfToken`). */
  readonly csrfToken: string;
  /** The response's CSP nonce for the page's scripts (`it.scriptNonce`). */
  readonly scriptNonce: string;
  /** The signed-in caller, when the route reads the session; null otherwise. */
  readonly viewer: PageViewer | null;
  /** HTML every page of this request shows above its content (`request.pageNotices`: a module's banner). */
  readonly notices: readonly string[];
}

declare module 'fastify' {
  interface FastifyReply {
    /** This request's page context (web/page-context.ts). */
    readonly page: PageContext;
  }
  interface FastifyRequest {
    /**
     * Notices, as HTML rendered (and escaped) by a module's own template, that every page of this
     * request shows at its top: a module's hook adds them before the handler (the impersonation banner).
     */
    pageNotices: string[] | null;
  }
}

export interface PageContextSources {
  /** Issues this browser's CSRF token (http/csrf.ts), setting its secret cookie when it has none. */
  issueCsrfToken(request: FastifyRequest, reply: FastifyReply): string;
  /**
   * The language of a request the browser routes' language hook has not seen (negotiated from the
   * request alone; a `?lang=` choice is remembered on `reply`, as that hook does).
   */
  languageOf(request: FastifyRequest, reply: FastifyReply): PageLanguage;
}

/** Gives every reply its page context (`reply.page`), made on first use. */
export function registerPageContext(app: FastifyInstance, sources: PageContextSources): void {
  const contexts = new WeakMap<FastifyReply, PageContext>();
  app.decorateRequest('pageNotices', null);
  app.decorateReply('page', {
    getter(this: FastifyReply): PageContext {
      let context = contexts.get(this);
      if (context === undefined) {
        context = requestPageContext(this, sources);
        contexts.set(this, context);
      }
      return context;
    },
  });
}

function requestPageContext(reply: FastifyReply, sources: PageContextSources): PageContext {
  const request = reply.request;
  let i18n: PageLanguage | undefined;
  let csrfToken: string | undefined;
  let scriptNonce: string | undefined;
  return {
    get i18n() {
      if (i18n === undefined) {
        // Declared on every request, set only on the browser routes (i18n module).
        const own = request.language as PageLanguage | null | undefined;
        if (own !== null && own !== undefined) i18n = own;
        else {
          i18n = sources.languageOf(request, reply);
          void reply.header('content-language', i18n.locale);
        }
      }
      return i18n;
    },
    get csrfToken() {
      return (csrfToken ??= sources.issueCsrfToken(request, reply));
    },
    get scriptNonce() {
      return (scriptNonce ??= createScriptNonce());
    },
    get viewer() {
      return request.gatehouseAuth ?? null;
    },
    get notices() {
      return request.pageNotices ?? [];
    },
  };
}

/**
 * The context of a page rendered outside a Gatehouse route (the OpenID Provider's own pages, which
 * carry their own form token; tests): the language given, English without one, no CSRF token.
 */
export function fixedPageContext(i18n: PageLanguage = ENGLISH_PAGE): PageContext {
  let scriptNonce: string | undefined;
  return {
    i18n,
    get csrfToken(): string {
      throw new Error('This page is rendered outside a Gatehouse route: it has no CSRF token');
    },
    get scriptNonce() {
      return (scriptNonce ??= createScriptNonce());
    },
    viewer: null,
    notices: [],
  };
}
