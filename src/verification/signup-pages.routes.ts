/**
 * The sign-up and e-mail verification pages: `/auth/signup` (the form), `/auth/check-email`
 * (where every sign-up lands, new address or not), `/auth/verify-email` (what a verification link
 * opens: a button that posts the token, never a GET that uses it up, because mail scanners fetch
 * links) and `/auth/email-verified`. Plain HTML forms posting to the API with the browser's CSRF
 * token. Register this plugin where form bodies are parsed; its routes are hidden from the OpenAPI
 * document.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { MAX_NAME_LENGTH, SIGNUP_PAGE } from '../credentials/signup.routes.ts';
import { CHECK_EMAIL_PAGE, EMAIL_VERIFIED_PAGE, VERIFY_EMAIL_PAGE } from './verification.routes.ts';
import type { VerificationService } from './verification.service.ts';
import { signupForm, verifyEmailForm } from './signup-pages.messages.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import type { FormView } from '../web/form-errors.ts';
import { takeFormValues } from '../http/form-values.ts';
import { firstValue, shownCode } from '../web/page-query.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';

/** Each page's template (in `templates/`) and the data it reads. */
interface SignupPages {
  signup: {
    csrfToken: string;
    isDisabled: boolean;
    /** What went wrong, by field (an unknown code only the general message), and what was typed (never the password). */
    form: FormView;
    minPasswordLength: number;
    maxNameLength: number;
  };
  'check-email': { csrfToken: string; expiresIn: string };
  'verify-email': {
    csrfToken: string;
    /** The link's token, only while it is live: the page then shows the button that uses it. */
    token: string | null;
    /** What went wrong (the link's state or why a resend came back), and the address typed. */
    form: FormView;
  };
  'email-verified': Record<never, never>;
}

export interface SignupPageRouteOptions {
  verification: VerificationService;
  config: Config;
}

/** A token from a link: anything may be there; the token check refuses what is not a token. */
const linkToken = z.preprocess(firstValue, z.string()).optional();

export const signupPageRoutes: FastifyPluginAsyncZod<SignupPageRouteOptions> = async (app, { verification, config }) => {
  const pages = createPageRenderer<SignupPages>(templatesIn(join(import.meta.dirname, 'templates')));
  const hidden = { hide: true } as const;
  // Pages for anyone, reachable while the MFA policy asks for enrolment (they are under /auth).
  const pageForAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };
  const { minLength, maxLength } = config.passwords;

  app.get(
    SIGNUP_PAGE,
    { config: pageForAnyone, schema: { ...hidden, querystring: z.object({ error: shownCode, reason: shownCode }) } },
    async (request, reply) => {
      const isDisabled = !config.accounts.allowSignup;
      const { error, reason } = request.query;
      const { i18n } = reply.page;
      const kept = takeFormValues(request, reply, { page: SIGNUP_PAGE, config });
      return pages.send(
        reply,
        'signup',
        {
          title: i18n.t('verification.signup.title'),
          isDisabled,
          form: signupForm(isDisabled ? undefined : error, reason, kept, { minLength, maxLength }, i18n),
          minPasswordLength: minLength,
          maxNameLength: MAX_NAME_LENGTH,
        },
        { status: isDisabled ? 403 : 200 },
      );
    },
  );

  app.get(CHECK_EMAIL_PAGE, { config: pageForAnyone, schema: hidden }, async (_request, reply) => {
    const { i18n } = reply.page;
    return pages.send(reply, 'check-email', { title: i18n.t('verification.check.title'), expiresIn: i18n.duration(config.accounts.verificationTokenTtlSeconds) });
  });

  app.get(
    VERIFY_EMAIL_PAGE,
    { config: pageForAnyone, schema: { ...hidden, querystring: z.object({ token: linkToken, error: shownCode }) } },
    async (request, reply) => {
      const { token, error } = request.query;
      // Looking is not using: the token is checked here and consumed only by the button's POST.
      const checked = token === undefined || token === '' ? null : await verification.checkToken(token);
      const code = error ?? (checked !== null && !checked.ok ? checked.reason : undefined);
      const { i18n } = reply.page;
      return pages.send(
        reply,
        'verify-email',
        {
          title: i18n.t('verification.verify.title'),
          token: checked?.ok === true && error === undefined ? token! : null,
          form: verifyEmailForm(code, takeFormValues(request, reply, { page: VERIFY_EMAIL_PAGE, config }), i18n),
        },
        { urlHoldsToken: true },
      );
    },
  );

  app.get(EMAIL_VERIFIED_PAGE, { config: pageForAnyone, schema: hidden }, async (_request, reply) => {
    return pages.send(reply, 'email-verified', { title: reply.page.i18n.t('verification.verified.title') });
  });
};

