/**
 * The hosted pages (`/`, `/auth/signin`, `/auth/signout`, `/auth/error`, `/dashboard`) and the
 * form endpoints behind the dashboard's buttons. Pages are plain HTML forms that post to the API
 * (or here) with the browser's CSRF token; they work without JavaScript. Register this plugin
 * where form bodies are parsed. Its routes are hidden from the OpenAPI document, which is for the API.
 */
import type { Clock } from '../lib/clock.ts';
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { DASHBOARD_GROUPS, renderPageLinks, renderPageSections, type AskingApp, type DashboardGroup, type PageLink, type PageLinkPlace, type PageSection } from '../module.ts';
import { AppError } from '../errors.ts';
import { access, DURING_ENROLMENT, IN_PERSON, sessionOf, signedIn } from '../authorization/access.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import { callbackFormActions, toCallbackUrl } from '../http/safe-redirect.ts';
import { SIGN_IN_PAGE, signInRedirect } from '../http/sign-in-redirect.ts';
import { takeFormValues } from '../http/form-values.ts';
import { clearSessionCookies } from '../sessions/session-cookie.ts';
import type { SessionService } from '../sessions/session.service.ts';
import type { PlaceFinder } from '../sessions/place.ts';
import type { OAuthService } from '../oauth/oauth.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { toSessionItems } from '../sessions/session-items.ts';
import { groupSessions, type SessionGroup } from './session-groups.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { firstValue, shownCode } from '../web/page-query.ts';
import { authErrorExplanation, dashboardError, dashboardNotice } from './pages.messages.ts';
import { changePasswordForm } from './change-password-form.ts';
import type { FormView } from '../web/form-errors.ts';
import { signInForm } from './signin-form.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

/** Each page's template (in `templates/`; `error` is the base's) and the data it reads. */
interface Pages {
  home: { isSignedIn: boolean };
  signin: {
    csrfToken: string;
    callbackUrl: string;
    /** The form: what went wrong (by field; an unknown code only the general message) and what was typed. */
    form: FormView;
    signedInAs: string | null;
    /**
     * The host of the trusted origin the callback names when Gatehouse's session cookie cannot
     * reach it (another host: cookies go by host, whatever the port): a signed-in visitor sent
     * back here is told that app must sign people in with OpenID Connect, not shown the form again.
     */
    unreachableApp: string | null;
    /** The app this sign-in is for ("to continue to …"), when a module knows the callback; null otherwise. */
    askingApp: AskingApp | null;
    /** The links other modules put under the password field and at the end of the page (their HTML). */
    links: { belowPassword: string[]; belowForm: string[] };
    /** A "Sign in with …" button each. */
    providers: Array<{ id: string; name: string }>;
    /** The sections other modules add (their own HTML), after the providers. */
    sections: string[];
  };
  signout: { csrfToken: string };
  dashboard: {
    csrfToken: string;
    user: { name: string; email: string; roles: string[] };
    /** By device (session-groups.ts): one card each. */
    sessionGroups: SessionGroup[];
    hasOtherSessions: boolean;
    /** What went wrong (`?error=`); the code is null for one we do not know (only the general message is shown). */
    notice: { code: string | null; message: string } | null;
    /** The change-password form after one of its errors; null otherwise. */
    passwordForm: FormView | null;
    /** The links other modules put in the header, before "Sign out", and under the change-password form (their HTML). */
    links: { header: string[]; belowPasswordForm: string[] };
    /** What a form just did (`?notice=`): a password changed. */
    confirmation: string | null;
    /** For the change-password form's hint. */
    minPasswordLength: number;
    /** Each configured provider, with the user's identity there if linked. */
    providers: Array<{ id: string; name: string; linked: { email: string | null } | null }>;
    /** The sections other modules add (their own HTML), by the group they are shown in, after the page's own parts of it. */
    sections: Record<DashboardGroup, string[]>;
    /** The navigation: a link to each group with something in it, in order. */
    nav: Array<{ id: DashboardGroup; label: string }>;
  };
}

export interface PageRouteOptions {
  /** Now, for the sessions' "signed in 3 hours ago" (tests move it). */
  clock: Clock;
  sessions: SessionService;
  /** The sessions' approximate places, when the operator configured a database (GEOIP_DATABASE_FILE). */
  places: PlaceFinder;
  config: Config;
  oauth: OAuthService;
  /** What other modules add to the dashboard. */
  sections: readonly PageSection[];
  /** What other modules add to the sign-in page (a passkey's button, say). */
  signInSections: readonly PageSection[];
  /** The links other modules put at the places of these pages (the sign-in page's "Forgot password?", say). */
  links: (place: PageLinkPlace) => readonly PageLink[];
  /** The app a callback URL leads back to, as the module that knows it says (the contract's `askingApps`). */
  askingApp: (callbackUrl: string) => Promise<AskingApp | null>;
}

export const DASHBOARD_PAGE = HUB_PAGES.dashboard;

/** The dashboard's groups that always have the page's own parts (account; password and providers; sessions). */
const OWN_GROUPS: ReadonlySet<DashboardGroup> = new Set(['profile', 'security', 'sessions']);

/** Judged by `toCallbackUrl`, which refuses what is too long, not ours and on no trusted origin. */
const callbackUrl = z.preprocess(firstValue, z.string()).optional();

const csrfField = z.string().max(200).optional();

export const pageRoutes: FastifyPluginAsyncZod<PageRouteOptions> = async (app, options) => {
  const { sessions, config, oauth } = options;
  const pages = createPageRenderer<Pages>(templatesIn(join(import.meta.dirname, 'templates')));
  const hidden = { hide: true } as const;
  // The pages under /auth and /dashboard stay reachable while the MFA policy asks for enrolment.
  const forAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };
  const forUser = { access: access.user({ exempt: [DURING_ENROLMENT] }) };

  /** The host of the trusted origin `callbackUrl` leads to, when it is not Gatehouse's own host; null otherwise. */
  const ownHost = new URL(config.authUrl).hostname;
  function cookielessHost(callbackUrl: string): string | null {
    const [origin] = callbackFormActions(callbackUrl, config);
    if (origin === undefined) return null;
    const target = new URL(origin);
    return target.hostname === ownHost ? null : target.host;
  }

  /** The person `auth` is, or null: a session whose user is gone counts as none. */
  async function describe(auth: RequestAuth | null) {
    if (auth === null) return null;
    const view = await sessions.describeSession(auth);
    return view === null ? null : { auth, view };
  }

  app.get('/', { config: { access: access.anyone({ readsSession: true }) }, schema: hidden }, async (request, reply) => {
    const isSignedIn = sessionOf(request) !== null;
    return pages.send(reply, 'home', { title: reply.page.i18n.t('pages.home.title'), isSignedIn });
  });

  app.get(
    HUB_PAGES.signIn,
    { config: { access: access.anyone({ readsSession: true, exempt: [DURING_ENROLMENT] }) }, schema: { ...hidden, querystring: z.object({ error: shownCode, callbackUrl }) } },
    async (request, reply) => {
      const { error, callbackUrl: requested } = request.query;
      const current = await describe(sessionOf(request));
      const callbackUrl = toCallbackUrl(requested, config);
      const sections = await renderPageSections(options.signInSections, { userId: null, page: reply.page, callbackUrl });
      const { i18n } = reply.page;
      // What a refused post typed (never the password) comes back once, through a cookie.
      const form = signInForm(error, takeFormValues(request, reply, { page: SIGN_IN_PAGE, config }), i18n);
      const linkContext = { page: reply.page, roles: current?.view.user.roles ?? [], code: form.code };
      return pages.send(
        reply,
        'signin',
        {
          title: i18n.t('pages.signin.title'),
          callbackUrl,
          sections: sections.html,
          scripts: sections.scripts,
          form,
          signedInAs: current?.view.user.email ?? null,
          unreachableApp: current === null ? null : cookielessHost(callbackUrl),
          askingApp: await options.askingApp(callbackUrl),
          links: { belowPassword: renderPageLinks(options.links('signin.below-password'), linkContext), belowForm: renderPageLinks(options.links('signin.below-form'), linkContext) },
          providers: oauth.listProviders(),
        },
        // The providers' buttons redirect to them, the sign-in form to the callback: a trusted
        // origin the callback names is allowed too, that one only.
        { formActionOrigins: [...new Set([...oauth.formActionOrigins(), ...callbackFormActions(callbackUrl, config)])] },
      );
    },
  );

  app.get(HUB_PAGES.signOut, { config: forAnyone, schema: hidden }, async (request, reply) => {
    return pages.send(reply, 'signout', { title: reply.page.i18n.t('pages.signout.title') });
  });

  app.get('/auth/error', { config: forAnyone, schema: { ...hidden, querystring: z.object({ error: shownCode }) } }, async (request, reply) => {
    const { heading, message, code } = authErrorExplanation(request.query.error ?? '', reply.page.i18n);
    return pages.send(reply, 'error', { title: heading, heading, message, code });
  });

  app.get(DASHBOARD_PAGE, { config: forUser, schema: { ...hidden, querystring: z.object({ error: shownCode, reason: shownCode, notice: shownCode }) } }, async (request, reply) => {
    const current = await describe(signedIn(request));
    if (current === null) return reply.redirect(signInRedirect(DASHBOARD_PAGE), 303);
    const { auth, view } = current;
    const { i18n } = reply.page;
    const items = toSessionItems(await sessions.listSessions(auth.userId), auth.sessionId, { i18n, nowMs: options.clock(), locate: await options.places.locator(i18n.locale) });
    const linked = await oauth.listLinkedAccounts(auth.userId);
    const providers = oauth.listProviders().map((provider) => ({
      id: provider.id,
      name: provider.name,
      linked: linked.find((account) => account.provider === provider.id) ?? null,
    }));
    const { error, reason, notice } = request.query;
    // The change-password form's own errors sit at its fields; the others in the page's alert.
    const passwordForm = changePasswordForm(error, reason, config.passwords, i18n);
    const sections = await renderPageSections(options.sections, { userId: auth.userId, page: reply.page });
    // Its forms' codes, the provider link's and the change-password form's (it posts to /api/auth/change-password).
    const shownError = error === undefined || passwordForm !== null ? null : dashboardError(error, reason, config.passwords, i18n);
    const linkContext = { page: reply.page, roles: view.user.roles, code: passwordForm?.code ?? shownError?.code ?? null };
    return pages.send(
      reply,
      'dashboard',
      {
        title: i18n.t('pages.dashboard.title'),
        isWide: true,
        user: view.user,
        links: {
          header: renderPageLinks(options.links('dashboard.header'), linkContext, { className: 'button button-secondary' }),
          belowPasswordForm: renderPageLinks(options.links('dashboard.below-password-form'), linkContext),
        },
        sessionGroups: groupSessions(items),
        hasOtherSessions: items.some((item) => !item.isCurrent),
        notice: shownError,
        passwordForm,
        confirmation: notice === undefined ? null : dashboardNotice(notice, i18n),
        minPasswordLength: config.passwords.minLength,
        providers,
        sections: sections.grouped,
        // The page's own parts are in profile, security and sessions; the other groups are the modules'.
        nav: DASHBOARD_GROUPS.filter((group) => OWN_GROUPS.has(group) || sections.grouped[group].length > 0).map((id) => ({ id, label: i18n.t(`pages.dashboard.nav.${id}`) })),
        scripts: sections.scripts,
      },
      { formActionOrigins: oauth.formActionOrigins() },
    );
  });

  // The dashboard's buttons. CSRF (origin + token) is checked for every form post before these run.
  // What they change only the person may do (never an administrator acting as them: IN_PERSON).
  const formRoute = { config: { access: access.user({ exempt: [DURING_ENROLMENT], requires: [IN_PERSON] }), formErrorPage: DASHBOARD_PAGE } };

  app.post(
    '/dashboard/sessions/end',
    { ...formRoute, schema: { ...hidden, body: z.object({ sessionId: z.string().min(1).max(64), csrfToken: csrfField }) } },
    async (request, reply) => {
      const auth = signedIn(request);
      const { sessionId } = request.body;
      if (!(await sessions.endSession(auth.userId, sessionId, requestSource(request, auth.userId)))) throw new AppError('NOT_FOUND', { message: 'No such active session.' });
      if (sessionId === auth.sessionId) {
        // Ending the session this browser uses is signing out.
        clearSessionCookies(reply, config);
        return reply.redirect('/', 303);
      }
      return reply.redirect(DASHBOARD_PAGE, 303);
    },
  );

  app.post(
    '/dashboard/accounts/unlink',
    { ...formRoute, schema: { ...hidden, body: z.object({ provider: z.string().min(1).max(64), csrfToken: csrfField }) } },
    async (request, reply) => {
      const auth = signedIn(request);
      const result = await oauth.unlinkIdentity(auth.userId, request.body.provider, requestSource(request, auth.userId));
      const target = new URLSearchParams(result.ok ? { notice: 'PROVIDER_UNLINKED' } : { error: result.reason });
      return reply.redirect(`${DASHBOARD_PAGE}?${target}`, 303);
    },
  );

  app.post(
    '/dashboard/sessions/end-others',
    { ...formRoute, schema: { ...hidden, body: z.object({ csrfToken: csrfField }).optional() } },
    async (request, reply) => {
      const auth = signedIn(request);
      await sessions.endAllSessions(auth.userId, { source: requestSource(request, auth.userId), exceptSessionId: auth.sessionId });
      return reply.redirect(DASHBOARD_PAGE, 303);
    },
  );
};
