/**
 * The second-factor pages (plain HTML forms, no script; the app's CSRF check covers every post):
 * - `/auth/mfa`: where a browser whose sign-in asked for a second factor enters a code or a
 *   recovery code (the challenge's token is in its cookie, see signin/challenge-cookie.ts);
 *   `POST /auth/mfa` also answers JSON, setting the session cookies, for scripts in a browser;
 * - the dashboard's forms: set up an authenticator app (QR code and key), turn it on, renew the
 *   recovery codes (shown once, to copy or download), remove it;
 * - `POST /admin/users/:id/mfa/reset` (and `POST /api/admin/users/:id/mfa/reset`): an
 *   administrator removes every second factor of a user who lost them all.
 * Register where form bodies are parsed.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Csrf, CsrfRotation } from '../http/csrf.ts';
import { AppError } from '../errors.ts';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn, type RouteAccess } from '../authorization/access.ts';
import { isFormPost } from '../http/forms.ts';
import { callbackFormActions, toCallbackUrl } from '../http/safe-redirect.ts';
import { signInRedirect, SIGN_IN_PAGE } from '../http/sign-in-redirect.ts';
import { requestSource } from '../audit/request-source.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { setBrowserSession } from '../sessions/session-cookie.ts';
import { clearChallengeCookie, readChallengeCookie } from '../signin/challenge-cookie.ts';
import { ADMIN_ROLE, type User, type UserService } from '../users/user.service.ts';
import type { Clock } from '../lib/clock.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { shownCode } from '../web/page-query.ts';
import { renderPageSections, type AskingApp, type PageSection } from '../module.ts';
import { hasFactor, type MfaService } from './mfa.service.ts';
import { isSingle } from '../signin/second-factor-kind.ts';
import { TOTP_METHOD } from './totp-factor.ts';
import { MFA_PROMPT_PAGE, type SecondFactor } from './second-factor.ts';
import { RECOVERY_CODE_COUNT } from './recovery-codes.ts';
import { mfaPageError, mfaPromptForm, mfaSetupForm, type ShownError } from './mfa-pages.messages.ts';
import type { FormView } from '../web/form-errors.ts';

/** `?using=` on the prompt after a wrong recovery code: its error goes to that field. */
const RECOVERY_CODE_USED = 'recovery-code';
import { challengeError } from './mfa.routes.ts';
import { signInBody } from '../signin/signin-response.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

interface MfaPages {
  /** `totpFields`, `recoveryFields`: the fields second-factor waivers add inside each form (signin/second-factor-waiver.ts). */
  'mfa-prompt': { csrfToken: string; callbackUrl: string; hasTotp: boolean; form: FormView; isRecoveryOpen: boolean; askingApp: AskingApp | null; sections: string[]; totpFields: string[]; recoveryFields: string[] };
  /** `form`: a wrong code, in the summary and beside the field (the code itself never comes back). */
  'mfa-setup': { csrfToken: string; qrSvg: string; secretGroups: string; form: FormView };
  'mfa-recovery-codes': { intro: string; codes: string[]; downloadHref: string; fileName: string };
  'mfa-dashboard-section': { csrfToken: string; hasTotp: boolean; hasFactor: boolean; recoveryCodesLeft: number; isRequired: boolean; recoveryCodeCount: number };
  /** `rows`: a row per kind of second factor, its label and what the user has of it. */
  'mfa-admin-section': { csrfToken: string; rows: Array<{ label: string; value: string }>; recoveryCodesLeft: number; hasFactor: boolean; userId: string };
}

export interface MfaPageRouteOptions {
  mfa: MfaService;
  secondFactor: SecondFactor;
  users: UserService;
  sessions: SessionService;
  csrf: Csrf & CsrfRotation;
  config: Config;
  clock: Clock;
  /** Other ways other modules offer to answer the challenge (a passkey). */
  promptSections: readonly PageSection[];
  /** The app the sign-in is for ("to continue to …"), as the module that knows the callback says. */
  askingApp: (callbackUrl: string) => Promise<AskingApp | null>;
}

const DASHBOARD_MFA = '/dashboard#mfa-heading';
const code = z.string().max(64).optional();
/** `rememberDevice`: a waiver's checkbox (a form's `on`), or the JSON flag. */
const rememberDevice = z.union([z.boolean(), z.string().max(8)]).optional();
const answerBody = z.object({ code, recoveryCode: code, rememberDevice, callbackUrl: z.string().max(2048).optional(), csrfToken: z.string().max(200).optional() }, { error: 'must be a JSON object' });
const codeForm = z.object({ code: z.string().max(64), csrfToken: z.string().max(200).optional() }, { error: 'must be a JSON object' });
const hidden = { hide: true } as const;

const renderer = () => createPageRenderer<MfaPages>(templatesIn(join(import.meta.dirname, 'templates')));

/** The key in groups of four, as apps print it and people type it. */
const grouped = (secret: string) => secret.replace(/(.{4})/g, '$1 ').trim();

/** The recovery codes' file: named after the deployment (`gatehouse-recovery-codes.txt`), in ASCII whatever its name. */
function recoveryCodesFileName(brandName: string): string {
  const slug = brandName.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40);
  return slug === '' ? 'recovery-codes.txt' : `${slug}-recovery-codes.txt`;
}

export const mfaPageRoutes: FastifyPluginAsyncZod<MfaPageRouteOptions> = async (app, options) => {
  const { mfa, secondFactor, users, sessions, csrf, config, clock } = options;
  const pages = renderer();

  /**
   * The dashboard's forms: signed in (or back to sign-in, then the dashboard), reachable during
   * enrolment, and a refusal (REAUTH_REQUIRED) on the forms' own error page.
   */
  const dashboardForm = (requires: readonly string[]): RouteAccess =>
    access.user({
      exempt: [DURING_ENROLMENT],
      requires,
      refusalPage: (_request, reply, errorCode) => showError(reply, errorCode, 403),
    });

  /** The signed-in user of a dashboard form, or null after sending the browser to sign in. */
  async function dashboardUser(request: FastifyRequest, reply: FastifyReply): Promise<(User & { auth: RequestAuth }) | null> {
    const auth = signedIn(request);
    const user = await users.findUserById(auth.userId);
    if (user === null) {
      void reply.redirect(signInRedirect(HUB_PAGES.dashboard), 303);
      return null;
    }
    return { ...user, auth };
  }

  /** In the person's language also when the access hook refused the form, before the browser routes' language hook ran (web/page-context.ts). */
  function showError(reply: FastifyReply, errorCode: string, status: number) {
    const { heading, message } = mfaPageError(errorCode, config.mfa.reauthWindowSeconds, reply.page.i18n);
    return pages.send(reply, 'error', { title: heading, heading, message, code: errorCode }, { status });
  }

  function showSetup(reply: FastifyReply, setup: { secret: string; qrSvg: string }, error: ShownError | null) {
    // The same setup again, with the error above its form: a page to go on from, not a failure.
    return pages.send(reply, 'mfa-setup', { title: reply.page.i18n.t('mfa.setup.title'), qrSvg: setup.qrSvg, secretGroups: grouped(setup.secret), form: mfaSetupForm(error, reply.page.i18n) });
  }

  /** The codes, shown once; `introKey` says why there are new ones (`mfa.recoveryCodes.intro.*`). */
  function showRecoveryCodes(reply: FastifyReply, codes: string[], introKey: 'enabled' | 'renewed') {
    const { i18n } = reply.page;
    const file = `${i18n.t('mfa.recoveryCodes.fileHeading', { brand: i18n.brand.name })}\n\n${codes.join('\n')}\n`;
    const downloadHref = `data:text/plain;charset=utf-8,${encodeURIComponent(file)}`;
    const intro = i18n.t(`mfa.recoveryCodes.intro.${introKey}`);
    return pages.send(reply, 'mfa-recovery-codes', { title: i18n.t('mfa.recoveryCodes.title'), intro, codes, downloadHref, fileName: recoveryCodesFileName(i18n.brand.name) });
  }

  // The second-factor prompt: no session yet (the challenge's cookie says who), during enrolment too.
  const challengePage = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };

  app.get(MFA_PROMPT_PAGE, { config: challengePage, schema: { ...hidden, querystring: z.object({ error: shownCode, using: shownCode, callbackUrl: z.string().max(2048).optional() }) } }, async (request, reply) => {
    // The sign-in's callback, carried here in the query (see redirectToChallenge) and judged again.
    const callbackUrl = toCallbackUrl(request.query.callbackUrl, config);
    const userId = await secondFactor.userOf(readChallengeCookie(request, config));
    if (userId === null) return reply.redirect(`${SIGN_IN_PAGE}?${new URLSearchParams({ error: 'MFA_EXPIRED', callbackUrl })}`, 303);
    const { error, using } = request.query;
    const { i18n } = reply.page;
    const sections = await renderPageSections(options.promptSections, { userId, page: reply.page, callbackUrl });
    const hasTotp = (await mfa.methodsOf(userId)).includes(TOTP_METHOD);
    const [totpFields, recoveryFields] = await Promise.all([secondFactor.promptFields(reply.page, userId, 'mfa-code'), secondFactor.promptFields(reply.page, userId, 'recovery-code')]);
    const usedRecoveryCode = using === RECOVERY_CODE_USED;
    // The code forms' post ends in a redirect to the callback, which browsers check against
    // `form-action`: a trusted origin it names is allowed, that one only.
    const formActionOrigins = callbackFormActions(callbackUrl, config);
    return pages.send(reply, 'mfa-prompt', {
      title: i18n.t('mfa.prompt.title'),
      callbackUrl,
      askingApp: await options.askingApp(callbackUrl),
      hasTotp,
      form: mfaPromptForm(error, usedRecoveryCode, hasTotp, i18n),
      isRecoveryOpen: !hasTotp || (error !== undefined && usedRecoveryCode),
      sections: sections.html,
      totpFields,
      recoveryFields,
      scripts: sections.scripts,
    }, { formActionOrigins });
  });

  app.post(MFA_PROMPT_PAGE, { config: challengePage, schema: { ...hidden, body: answerBody } }, async (request, reply) => {
    const { code: totp, recoveryCode, callbackUrl: requested } = request.body;
    const callbackUrl = toCallbackUrl(requested, config);
    const isForm = isFormPost(request);
    const source = requestSource(request, null);
    const result = await secondFactor.answer({ mfaToken: readChallengeCookie(request, config) ?? '', code: totp ?? recoveryCode ?? '' }, source);
    if (result.ok) {
      clearChallengeCookie(reply, config);
      const remember = request.body.rememberDevice;
      if (remember === true || remember === 'on' || remember === 'true') await secondFactor.remember(request, reply, result.user, source);
      await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: result.user.id, session: result.session });
      if (isForm) return reply.redirect(callbackUrl, 303);
      return signInBody(result);
    }
    const errorCode = 'reason' in result ? result.reason : 'refusal' in result ? result.refusal : result.challenge.code;
    // A wrong code may be tried again on the same page; anything else ends this sign-in.
    const isRetry = errorCode === 'INVALID_CODE' || errorCode === 'RATE_LIMITED';
    if (!isRetry) clearChallengeCookie(reply, config);
    if (isForm) {
      const page = isRetry ? MFA_PROMPT_PAGE : SIGN_IN_PAGE;
      // Which form the code came from, so the page puts its error at that field (not secret: a form's name).
      const using: Record<string, string> = isRetry && totp === undefined && recoveryCode !== undefined ? { using: RECOVERY_CODE_USED } : {};
      return reply.redirect(`${page}?${new URLSearchParams({ error: errorCode === 'CREDENTIALS_CHANGED' ? 'INVALID_TOKEN' : errorCode, ...using, callbackUrl })}`, 303);
    }
    throw challengeError(result);
  });

  // Adding the app carries no code of an existing factor: a recent one is needed (a stolen session
  // that never used the user's factor must not add one of its own). Removing it and renewing the
  // codes check a code in the request.
  app.post('/dashboard/mfa/totp/setup', { config: { access: dashboardForm([RECENT_SECOND_FACTOR, RECENT_SIGN_IN]) }, schema: { ...hidden, body: z.object({ csrfToken: z.string().max(200).optional() }).optional() } }, async (request, reply) => {
    const user = await dashboardUser(request, reply);
    if (user === null) return reply;
    const setup = await mfa.beginTotpSetup(user);
    if (!setup.ok) return reply.redirect(DASHBOARD_MFA, 303);
    return showSetup(reply, setup, null);
  });

  app.post('/dashboard/mfa/totp/enable', { config: { access: dashboardForm([RECENT_SECOND_FACTOR, RECENT_SIGN_IN]) }, schema: { ...hidden, body: codeForm } }, async (request, reply) => {
    const user = await dashboardUser(request, reply);
    if (user === null) return reply;
    const result = await mfa.enableTotp(user, request.body.code, requestSource(request, user.id));
    // The code just proved the factor: this session counts as having used it.
    if (result.ok) await sessions.reauthenticate(user.auth, ['otp', 'mfa']);
    if (result.ok) return showRecoveryCodes(reply, result.recoveryCodes, 'enabled');
    const pending = result.reason === 'INVALID_CODE' ? await mfa.pendingSetup(user) : null;
    if (pending !== null) return showSetup(reply, pending, { code: 'INVALID_CODE', message: reply.page.i18n.t('mfa.setup.error.INVALID_CODE') });
    return showError(reply, result.reason, result.reason === 'RATE_LIMITED' ? 429 : 409);
  });

  app.post('/dashboard/mfa/totp/disable', { config: { access: dashboardForm([RECENT_SIGN_IN]) }, schema: { ...hidden, body: codeForm } }, async (request, reply) => {
    const user = await dashboardUser(request, reply);
    if (user === null) return reply;
    const result = await mfa.disableTotp(user, request.body.code, requestSource(request, user.id));
    if (result.ok) return reply.redirect(DASHBOARD_MFA, 303);
    return showError(reply, result.reason, result.reason === 'RATE_LIMITED' ? 429 : 400);
  });

  app.post('/dashboard/mfa/recovery-codes', { config: { access: dashboardForm([RECENT_SIGN_IN]) }, schema: { ...hidden, body: codeForm } }, async (request, reply) => {
    const user = await dashboardUser(request, reply);
    if (user === null) return reply;
    const result = await mfa.regenerateRecoveryCodes(user, request.body.code, requestSource(request, user.id));
    if (result.ok) return showRecoveryCodes(reply, result.recoveryCodes, 'renewed');
    return showError(reply, result.reason, result.reason === 'RATE_LIMITED' ? 429 : 400);
  });

  // An administrator's change to a user: a current ADMIN (who, under MFA_REQUIRED_ROLES, used a
  // second factor), with a recent second factor if they have one.
  const adminChange = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
  for (const [path, isApi] of [['/admin/users/:id/mfa/reset', false], ['/api/admin/users/:id/mfa/reset', true]] as const) {
    app.post(
      path,
      {
        config: adminChange,
        schema: {
          ...(isApi ? { tags: ['admin'], summary: 'Remove every second factor of a user who lost them all (audited; the user is mailed)', security: [{ bearer: [] }] } : hidden),
          params: z.object({ id: z.string().max(64) }),
          ...(isApi ? { response: { 200: z.object({ ok: z.literal(true) }), 404: z.object({ error: z.string(), message: z.string() }).describe('NOT_FOUND') } } : {}),
        },
      },
      async (request, reply) => {
        const user = await users.findUserById(request.params.id);
        if (user === null) throw new AppError('NOT_FOUND');
        await mfa.resetFactors(user, requestSource(request, signedIn(request).userId));
        return isApi ? { ok: true as const } : reply.redirect(`/admin/users/${encodeURIComponent(user.id)}`, 303);
      },
    );
  }
};

/** The mfa module's sections of the dashboard and of the admin's page of a user. */
export function mfaPageSections(deps: { mfa: MfaService; users: UserService; requiredRoles: readonly string[] }): PageSection[] {
  const { mfa, users } = deps;
  const pages = renderer();
  return [
    {
      page: 'dashboard',
      group: 'security',
      async render({ userId, page }) {
        if (userId === null) return null;
        const [{ factors, recoveryCodesLeft }, user] = await Promise.all([mfa.status(userId), users.findUserById(userId)]);
        const isRequired = user !== null && user.roles.some((role) => deps.requiredRoles.includes(role));
        const hasTotp = factors.some(({ kind, items }) => kind.method === TOTP_METHOD && items.length > 0);
        return pages.html(page, 'mfa-dashboard-section', { title: '', hasTotp, hasFactor: hasFactor(factors), recoveryCodesLeft, isRequired, recoveryCodeCount: RECOVERY_CODE_COUNT });
      },
    },
    {
      page: 'admin-user',
      async render({ userId, page }) {
        if (userId === null) return null;
        const { i18n } = page;
        const { factors, recoveryCodesLeft } = await mfa.status(userId);
        // A kind an account has at most one of is set up or not; the others are counted.
        const rows = factors.map(({ kind, items }) => ({
          label: i18n.t(kind.adminLabel),
          value: isSingle(kind) ? i18n.t(items.length > 0 ? 'mfa.admin.setUp' : 'mfa.admin.none') : String(items.length),
        }));
        return pages.html(page, 'mfa-admin-section', { title: '', rows, recoveryCodesLeft, hasFactor: hasFactor(factors), userId });
      },
    },
  ];
}
