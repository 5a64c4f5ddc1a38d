/**
 * The e-mail sign-in pages (register them where form bodies parse; hidden from the OpenAPI
 * document), plain HTML forms that post to the API with the browser's CSRF token:
 * - `/auth/email-signin`: the address, and "E-mail me a link" (`POST /api/auth/email/start`);
 * - `/auth/email-signin/code`: "check your inbox", and the code prompt (`POST /api/auth/email/verify`,
 *   the request named by the browser's cookie);
 * - `/auth/email-signin/link?token=`: what a mailed link opens. Looking spends nothing (mail
 *   scanners fetch links): only its "Log in" button, a POST, uses the link.
 * And the sign-in page's choice, a section: "E-mail me a sign-in link" (with the page's callbackUrl).
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { PageSection } from '../module.ts';
import type { Translator } from '../i18n/translator.ts';
import { AppError } from '../errors.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formView, type FormView } from '../web/form-errors.ts';
import { firstValue, shownCode } from '../web/page-query.ts';
import { takeFormValues, type KeptForm } from '../http/form-values.ts';
import { toCallbackUrl } from '../http/safe-redirect.ts';
import { readBrowserBinding } from './browser-binding.ts';
import type { EmailSignInService } from './email-signin.service.ts';
import { EMAIL_CODE_PAGE, EMAIL_LINK_PAGE, EMAIL_START_PAGE } from './email-signin.routes.ts';

interface EmailSignInPages {
  'email-signin-start': { csrfToken: string; callbackUrl: string; form: FormView };
  'email-signin-code': { csrfToken: string; hasRequest: boolean; codeLength: number; expiresIn: string; form: FormView };
  'email-signin-link': { csrfToken: string; token: string | null; purpose: 'signin' | 'signup'; form: FormView };
  'email-signin-section': { href: string };
}

const renderer = () => createPageRenderer<EmailSignInPages>(templatesIn(join(import.meta.dirname, 'templates')));

/** The codes each page explains (`email-signin.<page>.error.<code>`); any other gets the page's general message. */
const PAGE_CODES = {
  start: ['VALIDATION_ERROR', 'RATE_LIMITED', 'CSRF_FAILED', 'SERVICE_UNAVAILABLE', 'INVALID_TOKEN'],
  code: ['INVALID_CODE', 'INVALID_TOKEN', 'TOKEN_EXPIRED', 'EMAIL_SIGNIN_VOIDED', 'EMAIL_SIGNIN_OTHER_BROWSER', 'RATE_LIMITED', 'ACCOUNT_DISABLED', 'SERVICE_UNAVAILABLE'],
  link: ['INVALID_TOKEN', 'TOKEN_EXPIRED', 'EMAIL_SIGNIN_OTHER_BROWSER', 'RATE_LIMITED', 'ACCOUNT_DISABLED', 'SERVICE_UNAVAILABLE'],
} as const;

/** The label of each page's field (its message key): the summary links to the field by it, the message said once, beside the field. */
const FIELD_LABELS: Readonly<Record<string, string>> = { email: 'email-signin.start.email', code: 'email-signin.code.label' };

/** The form of `page` after `code` (none: a fresh form), its problem at `fields` for the codes about them. */
function pageForm(page: keyof typeof PAGE_CODES, code: string | undefined, i18n: Pick<Translator, 't'>, options: { fields: readonly string[]; fieldCodes: readonly string[]; kept?: KeptForm }): FormView {
  const values = options.kept?.values ?? {};
  if (code === undefined) return formView({ fieldOrder: options.fields, values });
  const known = (PAGE_CODES[page] as readonly string[]).includes(code);
  const message = i18n.t(`email-signin.${page}.error.${known ? code : 'default'}`);
  const labels = Object.fromEntries(options.fields.map((field) => [field, i18n.t(FIELD_LABELS[field]!)]));
  return formView({ fieldOrder: options.fields, problems: [{ message, fields: options.fieldCodes.includes(code) ? options.fields : [] }], code: known ? code : null, values, labels });
}

/** The sign-in page's choice: a link to the start page, carrying the page's callbackUrl. */
export function emailSignInPageSections(emailSignIn: EmailSignInService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'signin',
      async render({ page, callbackUrl }) {
        if (!emailSignIn.isEnabled) return null;
        const href = callbackUrl === undefined ? EMAIL_START_PAGE : `${EMAIL_START_PAGE}?${new URLSearchParams({ callbackUrl })}`;
        return pages.html(page, 'email-signin-section', { title: '', href });
      },
    },
  ];
}

const linkToken = z.preprocess(firstValue, z.string().max(512)).optional();
const callbackUrl = z.preprocess(firstValue, z.string()).optional();

export const emailSignInPageRoutes: FastifyPluginAsyncZod<{ emailSignIn: EmailSignInService; config: Config }> = async (app, { emailSignIn, config }) => {
  const pages = renderer();
  const hidden = { hide: true } as const;
  const forAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };
  const ensureOn = async () => {
    if (!emailSignIn.isEnabled) throw new AppError('NOT_FOUND');
  };

  app.get(EMAIL_START_PAGE, { config: forAnyone, onRequest: ensureOn, schema: { ...hidden, querystring: z.object({ error: shownCode, callbackUrl }) } }, async (request, reply) => {
    const { i18n } = reply.page;
    const kept = takeFormValues(request, reply, { page: EMAIL_START_PAGE, config });
    const form = pageForm('start', request.query.error, i18n, { fields: ['email'], fieldCodes: ['VALIDATION_ERROR'], kept });
    return pages.send(reply, 'email-signin-start', { title: i18n.t('email-signin.start.title'), callbackUrl: toCallbackUrl(request.query.callbackUrl, config), form });
  });

  app.get(EMAIL_CODE_PAGE, { config: forAnyone, onRequest: ensureOn, schema: { ...hidden, querystring: z.object({ error: shownCode }) } }, async (request, reply) => {
    const { i18n } = reply.page;
    const hasRequest = readBrowserBinding(request, config) !== null;
    // Without a request of this browser's the page has no code field: the summary says the message.
    const form = pageForm('code', request.query.error, i18n, { fields: hasRequest ? ['code'] : [], fieldCodes: ['INVALID_CODE'] });
    return pages.send(reply, 'email-signin-code', {
      title: i18n.t('email-signin.code.title'),
      hasRequest,
      codeLength: config.emailSignin.codeLength,
      expiresIn: i18n.duration(emailSignIn.ttlSeconds),
      form,
    });
  });

  app.get(EMAIL_LINK_PAGE, { config: forAnyone, onRequest: ensureOn, schema: { ...hidden, querystring: z.object({ token: linkToken, error: shownCode }) } }, async (request, reply) => {
    const { token, error } = request.query;
    // Looking is not using: the link is checked here, and spent only by the button's POST.
    const state = token === undefined || token === '' || error !== undefined ? null : await emailSignIn.checkLink(token, readBrowserBinding(request, config)?.secret ?? null);
    const code = error ?? (state === null ? 'INVALID_TOKEN' : state.ok ? undefined : state.reason);
    const { i18n } = reply.page;
    return pages.send(
      reply,
      'email-signin-link',
      {
        title: i18n.t('email-signin.link.title'),
        token: state?.ok === true ? token! : null,
        purpose: state?.ok === true ? state.purpose : 'signin',
        form: pageForm('link', code, i18n, { fields: [], fieldCodes: [] }),
      },
      { urlHoldsToken: true },
    );
  });
};
