/**
 * The pages the OpenID Provider shows itself (inside its Koa context): the logout question, the
 * device-code pages and its error page, in our layout and under our page headers. The provider
 * hands us its forms as HTML; we take only their action and anti-forgery value from them and
 * render our own form (no script, no inline handler), so the page CSP holds.
 */
import { join } from 'node:path';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { createPageRenderer, ENGLISH_PAGE, formActionSource, pageResponseHeaders, templatesIn, type PageLanguage } from '../web/render.ts';

interface OidcPages {
  'oidc-logout': { action: string; xsrf: string; clientName: string | null };
  'oidc-logged-out': { clientName: string | null };
  'oidc-device-input': { action: string; xsrf: string; userCode: string; error: string | null };
  'oidc-device-confirm': { action: string; xsrf: string; clientName: string; userCode: string };
  'oidc-device-done': { clientName: string };
  'oidc-consent': { action: string; csrfToken: string; clientName: string; email: string; items: string[]; redirectOrigin: string };
  'oidc-continue': { url: string };
  'oidc-connected-apps': { csrfToken: string; apps: Array<{ clientId: string; name: string; scopes: string }> };
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

/** Error codes of the provider shown on our error page, in words. */
const ERROR_MESSAGES: Readonly<Record<string, string>> = {
  invalid_request: 'The app sent a request Gatehouse cannot accept. Go back to the app and try again.',
  invalid_client: 'The app is not registered with Gatehouse.',
  invalid_redirect_uri: 'The app asked to return to an address it has not registered.',
  unauthorized_client: 'The app is not allowed to sign in this way.',
  access_denied: 'The request was denied.',
  invalid_scope: 'The app asked for access Gatehouse does not offer.',
  invalid_target: 'The app asked for access to an API Gatehouse does not know.',
  login_required: 'You need to sign in.',
  consent_required: 'The app needs your consent.',
  session_not_found: 'The sign-in request has expired. Go back to the app and start again.',
  expired_login_request: 'The sign-in request has expired. Go back to the app and start again.',
};

export function oidcErrorMessage(code: string): string {
  return ERROR_MESSAGES[code] ?? 'Something went wrong while signing you in to an app. Go back to the app and try again.';
}

/** `i18n`: the pages' language and brand (English, in the deployment's brand: these texts are not in the catalogs yet). */
export function createProviderPages(pages: OidcPageRenderer, i18n: PageLanguage = ENGLISH_PAGE): ProviderPages {
  function send(ctx: KoaContextWithOIDC, html: string, options: { status?: number; formActionOrigins?: string[] } = {}): void {
    ctx.set(pageResponseHeaders({ formActionOrigins: options.formActionOrigins }) as Record<string, string>);
    ctx.type = 'html';
    if (options.status !== undefined) ctx.status = options.status;
    ctx.body = html;
  }
  const clientName = (ctx: KoaContextWithOIDC) => ctx.oidc.client?.clientName ?? null;

  return {
    logout(ctx, form, postLogoutRedirectUri) {
      const source = postLogoutRedirectUri === undefined ? null : formActionSource(postLogoutRedirectUri);
      send(ctx, pages.render('oidc-logout', { i18n, title: 'Sign out', ...formParts(form), clientName: clientName(ctx) }), {
        // The form's answer redirects to the app's post-logout address: the CSP must let it.
        formActionOrigins: source === null ? [] : [source],
      });
    },
    loggedOut(ctx) {
      send(ctx, pages.render('oidc-logged-out', { i18n, title: 'Signed out', clientName: clientName(ctx) }));
    },
    deviceInput(ctx, form, error) {
      const name = (error as { name?: string; userCode?: string } | undefined)?.name;
      const message =
        error === undefined
          ? null
          : name === 'NoCodeError' || (error as { userCode?: string }).userCode !== undefined
            ? 'That code is not right, or it has expired. Check the code on your device and try again.'
            : name === 'AbortedError'
              ? 'The request was cancelled on this page. Start again on your device.'
              : 'That did not work. Start again on your device.';
      send(ctx, pages.render('oidc-device-input', { i18n, title: 'Connect a device', ...formParts(form), userCode: '', error: message }), { status: error === undefined ? 200 : 400 });
    },
    deviceConfirm(ctx, form, name, userCode) {
      send(ctx, pages.render('oidc-device-confirm', { i18n, title: 'Connect a device', ...formParts(form), clientName: name, userCode }));
    },
    deviceDone(ctx) {
      send(ctx, pages.render('oidc-device-done', { i18n, title: 'Device connected', clientName: clientName(ctx) ?? 'The device' }));
    },
    error(ctx, out) {
      const code = typeof out.error === 'string' && /^[a-z_]{1,64}$/.test(out.error) ? out.error : 'server_error';
      send(ctx, pages.render('error', { i18n, title: 'Sign-in problem', heading: 'Sign-in problem', message: oidcErrorMessage(code), code: code.toUpperCase() }), {
        status: ctx.status >= 400 ? ctx.status : 400,
      });
    },
  };
}
