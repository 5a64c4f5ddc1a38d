/**
 * The pages the OpenID Provider shows itself (inside its Koa context): the logout question, the
 * device-code pages and its error page, in our layout and under our page headers. The provider
 * hands us its forms as HTML; we take only their action and anti-forgery value from them and
 * render our own form (no script, no inline handler), so the page CSP holds.
 *
 * No Fastify hook runs on these requests (the bridge hands them to the provider untouched), so
 * their language is found here, from the Node request: the language the person chose on our pages
 * (the `gatehouse.lang` cookie), else their browser's Accept-Language, else English.
 */
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { LOCALE_COOKIE, negotiateLocale } from '../i18n/negotiate.ts';
import type { Translations } from '../i18n/translator.ts';
import type { Brand } from '../web/brand.ts';
import { createPageRenderer, formActionSource, pageResponseHeaders, templatesIn, type PageLanguage } from '../web/render.ts';
import { fixedPageContext } from '../web/page-context.ts';
import type { ConnectedAppView } from './connected-apps.ts';

interface OidcPages {
  'oidc-logout': { action: string; xsrf: string; clientName: string | null };
  'oidc-logged-out': { clientName: string | null };
  'oidc-device-input': { action: string; xsrf: string; userCode: string; error: string | null };
  'oidc-device-confirm': { action: string; xsrf: string; clientName: string; userCode: string };
  'oidc-device-done': { clientName: string | null };
  /** `redirectOrigin`: where the answer goes (null: nowhere, a device flow's consent). */
  /** `clientHost`: the host of a client named by its metadata document (shown prominently: it is all that vouches for the app). */
  'oidc-consent': { action: string; csrfToken: string; clientName: string; clientHost: string | null; email: string; items: string[]; redirectOrigin: string | null };
  'oidc-continue': { url: string };
  'oidc-connected-apps': { csrfToken: string; apps: ConnectedAppView[] };
  /** The administrators' page of a user (`userId`): their apps, each with a revoke form. */
  'oidc-connected-apps-admin': { csrfToken: string; userId: string; apps: ConnectedAppView[] };
}

export type OidcPageRenderer = ReturnType<typeof createOidcPageRenderer>;

export function createOidcPageRenderer() {
  return createPageRenderer<OidcPages>(templatesIn(join(import.meta.dirname, 'templates')));
}

export interface ProviderPages {
  logout(ctx: KoaContextWithOIDC, form: string, postLogoutRedirectUri: string | undefined): void;
  loggedOut(ctx: KoaContextWithOIDC): void;
  deviceInput(ctx: KoaContextWithOIDC, form: string, error: unknown): void;
  deviceConfirm(ctx: KoaContextWithOIDC, form: string, clientName: string, userCode: string): void;
  deviceDone(ctx: KoaContextWithOIDC): void;
  error(ctx: KoaContextWithOIDC, out: { error?: string; error_description?: string }): void;
}

/** `action` and the `xsrf` value of a form the provider generated. */
export function formParts(form: string): { action: string; xsrf: string } {
  const action = /action="([^"]*)"/.exec(form)?.[1] ?? '';
  const xsrf = /name="xsrf" value="([^"]*)"/.exec(form)?.[1] ?? '';
  return { action: decodeEntities(action), xsrf: decodeEntities(xsrf) };
}

function decodeEntities(text: string): string {
  return text.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

/** Error codes of the provider that our error page explains (`oidc-provider.error.message.<code>`). */
export const OIDC_ERROR_CODES: ReadonlySet<string> = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_redirect_uri',
  'unauthorized_client',
  'access_denied',
  'invalid_scope',
  'invalid_request_object',
  'invalid_target',
  'login_required',
  'consent_required',
  'session_not_found',
  'expired_login_request',
]);

/** The error page's model for a provider error code, in the page's language. */
export function oidcErrorPage(code: string, i18n: PageLanguage): { title: string; heading: string; message: string; code: string } {
  const title = i18n.t('oidc-provider.error.title');
  const message = i18n.t(`oidc-provider.error.message.${OIDC_ERROR_CODES.has(code) ? code : 'default'}`, { brand: i18n.brand.name });
  // The code is the provider's (never one from the URL): shown for support, known or not.
  return { title, heading: title, message, code: code.toUpperCase() };
}

/** How a page the provider renders finds its language and brand: from the request alone. */
export type ProviderPageLanguage = (req: IncomingMessage) => PageLanguage;

/**
 * The language of a request the provider answers: the `gatehouse.lang` cookie our pages set when
 * a language is chosen, else Accept-Language. No `?lang=` (the provider's URLs are not ours to add
 * parameters to) and so no language switcher on these pages; the deployment's brand.
 */
export function providerPageLanguage(translations: Translations, brand: Brand): ProviderPageLanguage {
  return (req) => {
    const { locale } = negotiateLocale({ cookie: cookieValue(req.headers.cookie, LOCALE_COOKIE), acceptLanguage: req.headers['accept-language'] });
    return { ...translations.translator(locale), links: [], brand };
  };
}

/** The value of the first cookie named `name` in a Cookie header (a language tag: nothing to decode). */
function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

export function createProviderPages(pages: OidcPageRenderer, languageOf: ProviderPageLanguage): ProviderPages {
  function send(ctx: KoaContextWithOIDC, i18n: PageLanguage, html: string, options: { status?: number; formActionOrigins?: string[] } = {}): void {
    ctx.set(pageResponseHeaders({ formActionOrigins: options.formActionOrigins }) as Record<string, string>);
    ctx.set('content-language', i18n.locale);
    ctx.type = 'html';
    if (options.status !== undefined) ctx.status = options.status;
    ctx.body = html;
  }
  const clientName = (ctx: KoaContextWithOIDC) => ctx.oidc.client?.clientName ?? null;

  return {
    logout(ctx, form, postLogoutRedirectUri) {
      const i18n = languageOf(ctx.req);
      const source = postLogoutRedirectUri === undefined ? null : formActionSource(postLogoutRedirectUri);
      send(ctx, i18n, pages.html(fixedPageContext(i18n), 'oidc-logout', { title: i18n.t('oidc-provider.logout.title'), ...formParts(form), clientName: clientName(ctx) }), {
        // The form's answer redirects to the app's post-logout address: the CSP must let it.
        formActionOrigins: source === null ? [] : [source],
      });
    },
    loggedOut(ctx) {
      const i18n = languageOf(ctx.req);
      send(ctx, i18n, pages.html(fixedPageContext(i18n), 'oidc-logged-out', { title: i18n.t('oidc-provider.loggedOut.title'), clientName: clientName(ctx) }));
    },
    deviceInput(ctx, form, error) {
      const i18n = languageOf(ctx.req);
      const name = (error as { name?: string; userCode?: string } | undefined)?.name;
      const message =
        error === undefined
          ? null
          : name === 'NoCodeError' || (error as { userCode?: string }).userCode !== undefined
            ? i18n.t('oidc-provider.device.input.error.invalidCode')
            : name === 'AbortedError'
              ? i18n.t('oidc-provider.device.input.error.aborted')
              : i18n.t('oidc-provider.device.input.error.default');
      send(ctx, i18n, pages.html(fixedPageContext(i18n), 'oidc-device-input', { title: i18n.t('oidc-provider.device.title'), ...formParts(form), userCode: '', error: message }), {
        status: error === undefined ? 200 : 400,
      });
    },
    deviceConfirm(ctx, form, name, userCode) {
      const i18n = languageOf(ctx.req);
      send(ctx, i18n, pages.html(fixedPageContext(i18n), 'oidc-device-confirm', { title: i18n.t('oidc-provider.device.title'), ...formParts(form), clientName: name, userCode }));
    },
    deviceDone(ctx) {
      const i18n = languageOf(ctx.req);
      send(ctx, i18n, pages.html(fixedPageContext(i18n), 'oidc-device-done', { title: i18n.t('oidc-provider.device.done.title'), clientName: clientName(ctx) }));
    },
    error(ctx, out) {
      const i18n = languageOf(ctx.req);
      const code = typeof out.error === 'string' && /^[a-z_]{1,64}$/.test(out.error) ? out.error : 'server_error';
      send(ctx, i18n, pages.html(fixedPageContext(i18n), 'error', { ...oidcErrorPage(code, i18n) }), {
        status: ctx.status >= 400 ? ctx.status : 400,
      });
    },
  };
}
