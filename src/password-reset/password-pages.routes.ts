/**
 * The password reset pages: `/auth/forgot-password` (the form asking for a link),
 * `/auth/forgot-password/sent` (where it lands, account or not), `/auth/reset-password?token=`
 * (what a reset link opens: the token is checked first, and only a live one gets the form) and
 * `/auth/reset-password/done` (sign in with the new password; with `?token=` (a review token), the providers that can
 * still sign in, each with a button that removes it: see the oauth module's review link). Plain HTML forms posting to the API
 * with the browser's CSRF token. Register this plugin where form bodies are parsed; its routes are
 * hidden from the OpenAPI document.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { FORGOT_PASSWORD_PAGE, RESET_PASSWORD_PAGE, type PasswordResetService } from './password-reset.service.ts';
import { FORGOT_PASSWORD_SENT_PAGE, RESET_PASSWORD_DONE_PAGE } from './password.routes.ts';
import { forgotPasswordForm, resetPasswordError, resetPasswordForm } from './password-pages.messages.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import type { FormView } from '../web/form-errors.ts';
import { takeFormValues } from '../http/form-values.ts';
import { firstValue, shownCode } from '../web/page-query.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';

/** Each page's template (in `templates/`) and the data it reads. */
interface PasswordPages {
  /** `form`: what went wrong, by field (an unknown code only the general message), and the address typed. */
  'forgot-password': { csrfToken: string; form: FormView };
  'forgot-password-sent': { expiresIn: string };
  'reset-password': {
    csrfToken: string;
    /** Only for a live token: the form that sets the password with it. */
    link: { token: string; email: string } | null;
    /** What went wrong: the link's state (no form then), or why the form came back, by field. */
    form: FormView;
    minPasswordLength: number;
  };
  'reset-password-done': {
    /** The providers linked when the password was reset, with the review token their buttons post; null for none. */
    review: { token: string; csrfToken: string; accounts: Array<{ provider: string; providerName: string; email: string | null }> } | null;
  };
}

/** The oauth module's review link, as the confirmation page reads it (absent without that module). */
export interface LinkReviews {
  openLinkReview(token: unknown): Promise<{ ok: true; accounts: Array<{ provider: string; providerName: string; email: string | null }> } | { ok: false }>;
}

export interface PasswordPageRouteOptions {
  passwordReset: PasswordResetService;
  config: Config;
  linkReviews?: LinkReviews;
}

/** A token from a link: anything may be there; the token check refuses what is not a token. */
const linkToken = z.preprocess(firstValue, z.string()).optional();

export const passwordPageRoutes: FastifyPluginAsyncZod<PasswordPageRouteOptions> = async (app, { passwordReset, config, linkReviews }) => {
  const pages = createPageRenderer<PasswordPages>(templatesIn(join(import.meta.dirname, 'templates')));
  const hidden = { hide: true } as const;
  // Pages for anyone, reachable while the MFA policy asks for enrolment (they are under /auth).
  const pageForAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };
  const { minLength, maxLength } = config.passwords;

  app.get(FORGOT_PASSWORD_PAGE, { config: pageForAnyone, schema: { ...hidden, querystring: z.object({ error: shownCode }) } }, async (request, reply) => {
    const { error } = request.query;
    const { i18n } = reply.page;
    return pages.send(reply, 'forgot-password', {
      title: i18n.t('password-reset.forgot.title'),
      // What a refused post typed comes back once, through a cookie (http/form-values.ts).
      form: forgotPasswordForm(error, takeFormValues(request, reply, { page: FORGOT_PASSWORD_PAGE, config }), i18n),
    });
  });

  app.get(FORGOT_PASSWORD_SENT_PAGE, { config: pageForAnyone, schema: hidden }, async (_request, reply) => {
    const { i18n } = reply.page;
    return pages.send(reply, 'forgot-password-sent', { title: i18n.t('password-reset.sent.title'), expiresIn: i18n.duration(config.accounts.resetTokenTtlSeconds) });
  });

  app.get(
    RESET_PASSWORD_PAGE,
    { config: pageForAnyone, schema: { ...hidden, querystring: z.object({ token: linkToken, error: shownCode, reason: shownCode }) } },
    async (request, reply) => {
      const { token, error, reason } = request.query;
      // Looking is not using: mail scanners fetch links. Only the form's POST consumes the token.
      const checked = token === undefined || token === '' ? null : await passwordReset.checkToken(token);
      const isLive = checked !== null && checked.ok;
      // A dead or missing token explains itself; a live one shows why its last post came back, if it did.
      const code = checked !== null && !checked.ok ? checked.reason : (error ?? (isLive ? undefined : 'INVALID_TOKEN'));
      const { i18n } = reply.page;
      return pages.send(
        reply,
        'reset-password',
        {
          title: i18n.t('password-reset.reset.title'),
          link: isLive ? { token: token!, email: checked.user.email } : null,
          form: resetPasswordForm(code === undefined ? null : resetPasswordError(code, reason, { minLength, maxLength }, i18n), i18n, isLive),
          minPasswordLength: minLength,
        },
        // The URL holds a live token: no Referer may carry it, not even to our own stylesheet. The
        // form then posts with `Origin: null`, which the CSRF check accepts only together with
        // `Sec-Fetch-Site: same-origin`. The page loads nothing from any other origin.
        { urlHoldsToken: true },
      );
    },
  );

  app.get(RESET_PASSWORD_DONE_PAGE, { config: pageForAnyone, schema: { ...hidden, querystring: z.object({ token: linkToken }) } }, async (request, reply) => {
    const { token } = request.query;
    const opened = token === undefined || token === '' || linkReviews === undefined ? null : await linkReviews.openLinkReview(token);
    const review = opened !== null && opened.ok && opened.accounts.length > 0 ? { token: token!, csrfToken: reply.page.csrfToken, accounts: opened.accounts } : null;
    // With a review token in its URL, the page is a link page: no Referer carries it anywhere.
    return pages.send(reply, 'reset-password-done', { title: reply.page.i18n.t('password-reset.done.title'), review }, { urlHoldsToken: review !== null });
  });
};

