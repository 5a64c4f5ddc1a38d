/**
 * The passkeys' part of the hosted pages:
 * - a dashboard section listing the user's passkeys, each with a Rename and a Remove form, and
 *   "Add a passkey"; a sign-in page section with "Sign in with a passkey" (on the second-factor
 *   page "Use a passkey", with the waivers' "Don't ask again on this browser" beside it). Both load
 *   `/assets/passkeys.js` (the page gives it a CSP nonce); without WebAuthn their buttons stay
 *   hidden, and the page looks as it would without them. Both are rendered in the page's language,
 *   and carry what the script may say (`data-texts`, JSON) in it too: the script holds no text;
 * - `GET /assets/passkeys.js`: @simplewebauthn/browser's own browser bundle (UMD, no eval) and our
 *   script (`assets/passkeys.client.js`), one file, read once at start;
 * - `POST /dashboard/passkeys/rename` and `/remove`: the same forms posted without JavaScript
 *   (the script sends them to the JSON API instead); a refusal (REAUTH_REQUIRED) goes back to the
 *   dashboard with its code, as the forms' other errors do. Register where form bodies are parsed.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PageSection, PageSectionContext } from '../module.ts';
import type { Translator } from '../i18n/translator.ts';
import type { Config } from '../config.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import type { UserService } from '../users/user.service.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import type { Clock } from '../lib/clock.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import type { PasskeyService } from './passkeys.service.ts';
import { MAX_PASSKEY_NAME_LENGTH, passkeyName } from './passkeys.schemas.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

export const PASSKEYS_SCRIPT = '/assets/passkeys.js';
const DASHBOARD = HUB_PAGES.dashboard;
const DASHBOARD_PASSKEYS = '/dashboard#passkeys-heading';
const MAX_AGE_SECONDS = 3600;

interface PasskeyPages {
  'passkeys-dashboard-section': {
    csrfToken: string;
    maxNameLength: number;
    passkeys: Array<{ id: string; name: string; createdAt: TimeText; lastUsedAt: TimeText | null }>;
    /** `scriptTexts`, as JSON. */
    texts: string;
  };
  'passkeys-signin-section': {
    csrfToken: string;
    callbackUrl: string;
    /** On the second-factor page: answer the challenge of its cookie. */
    fromChallenge: boolean;
    /** On the second-factor page: the second-factor waivers' fields ("Don't ask again on this browser"), whose `rememberDevice` the script sends. */
    fields: string[];
    texts: string;
  };
}

const renderer = () => createPageRenderer<PasskeyPages>(templatesIn(join(import.meta.dirname, 'templates')));

/**
 * Codes the script may meet, each with its own text (`passkeys.script.error.<code>`): the
 * browser's refusals under names of ours (lower case), the API's codes as it answers them. Any
 * other API code gets the general text with the code in it.
 */
const SCRIPT_ERRORS = [
  'deviceHasPasskey',
  'cancelled',
  'insecureAddress',
  'REAUTH_REQUIRED',
  'CSRF_FAILED',
  'RATE_LIMITED',
  'UNAUTHENTICATED',
  'INVALID_TOKEN',
  'ACCOUNT_DISABLED',
  'EMAIL_NOT_VERIFIED',
  'VALIDATION_ERROR',
  'SERVICE_UNAVAILABLE',
  'INVALID_PASSKEY',
  'PASSKEY_REGISTRATION_FAILED',
  'PASSKEY_NOT_FOUND',
  'PASSKEY_ALREADY_REGISTERED',
  'PASSKEY_LIMIT_REACHED',
] as const;

/**
 * What the browser script says, in the page's language, for the section's `data-texts`. Messages
 * about a value only the script knows keep its placeholder (`{name}`, `{code}`) for the script to
 * fill in: the translation, not the script, decides where it goes.
 */
export function scriptTexts(i18n: Pick<Translator, 't'>): Record<string, string | Record<string, string>> {
  const later = { name: '{name}', code: '{code}' };
  return {
    creating: i18n.t('passkeys.script.creating'),
    using: i18n.t('passkeys.script.using'),
    added: i18n.t('passkeys.script.added', later),
    addedWithCodes: i18n.t('passkeys.script.addedWithCodes', later),
    renamed: i18n.t('passkeys.script.renamed', later),
    removed: i18n.t('passkeys.script.removed'),
    signedIn: i18n.t('passkeys.script.signedIn'),
    errorWithCode: i18n.t('passkeys.script.error.withCode', later),
    errorDefault: i18n.t('passkeys.script.error.default'),
    errors: Object.fromEntries(SCRIPT_ERRORS.map((code) => [code, i18n.t(`passkeys.script.error.${code}`, { max: MAX_PASSKEY_NAME_LENGTH })])),
  };
}

/** The second-factor waivers' fields for the second-factor page (the mfa module's `promptFields`). */
export type PromptFields = (page: PageSectionContext['page'], userId: string, formId: string) => Promise<string[]>;

export function passkeyPageSections(passkeys: PasskeyService, promptFields: PromptFields): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'dashboard',
      group: 'security',
      scripts: [PASSKEYS_SCRIPT],
      async render({ userId, page }) {
        const { i18n } = page;
        if (userId === null) return null;
        const list = (await passkeys.listPasskeys(userId)).map((passkey) => ({
          id: passkey.id,
          name: passkey.name,
          createdAt: formatTime(passkey.createdAt, i18n.locale),
          lastUsedAt: passkey.lastUsedAt === null ? null : formatTime(passkey.lastUsedAt, i18n.locale),
        }));
        const texts = JSON.stringify(scriptTexts(i18n));
        return pages.html(page, 'passkeys-dashboard-section', { title: '', maxNameLength: MAX_PASSKEY_NAME_LENGTH, passkeys: list, texts });
      },
    },
    {
      page: 'signin',
      scripts: [PASSKEYS_SCRIPT],
      async render({ callbackUrl, page }) {
        const { i18n } = page;
        return pages.html(page, 'passkeys-signin-section', { title: '', callbackUrl: callbackUrl ?? DASHBOARD, fromChallenge: false, fields: [], texts: JSON.stringify(scriptTexts(i18n)) });
      },
    },
    {
      // The second-factor page: for a user with a passkey, it may answer the challenge.
      page: 'mfa-prompt',
      scripts: [PASSKEYS_SCRIPT],
      async render({ userId, callbackUrl, page }) {
        const { i18n } = page;
        if (userId === null || (await passkeys.listPasskeys(userId)).length === 0) return null;
        const fields = await promptFields(page, userId, 'passkey');
        return pages.html(page, 'passkeys-signin-section', { title: '', callbackUrl: callbackUrl ?? DASHBOARD, fromChallenge: true, fields, texts: JSON.stringify(scriptTexts(i18n)) });
      },
    },
  ];
}

/** The browser bundle @simplewebauthn/browser ships (`dist/bundle/index.umd.min.js`), then ours. */
export function passkeysScript(): Buffer {
  const require = createRequire(import.meta.url);
  // The package's exports name no bundle: find it beside its CommonJS entry (`script/index.js`).
  const packageRoot = dirname(dirname(require.resolve('@simplewebauthn/browser')));
  const bundle = readFileSync(join(packageRoot, 'dist/bundle/index.umd.min.js'), 'utf8');
  const ours = readFileSync(join(import.meta.dirname, 'assets/passkeys.client.js'), 'utf8');
  const notice = '/* @simplewebauthn/browser (MIT licence, https://github.com/MasterKale/SimpleWebAuthn), then Gatehouse\'s passkeys script. */\n';
  return Buffer.from(`${notice}${bundle}\n;\n${ours}`);
}

/** `GET /assets/passkeys.js`, revalidated by ETag after a short max-age (its URL is not versioned). */
export const passkeyAssetRoutes: FastifyPluginAsyncZod = async (app) => {
  const script = passkeysScript();
  const etag = `"${createHash('sha256').update(script).digest('base64url').slice(0, 27)}"`;
  app.get(PASSKEYS_SCRIPT, { config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) }, schema: { hide: true } }, async (request, reply) => {
    void reply.headers({ 'cache-control': `public, max-age=${MAX_AGE_SECONDS}`, etag, 'x-content-type-options': 'nosniff' });
    const presented = request.headers['if-none-match'];
    if (presented !== undefined && presented.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) return reply.code(304).send();
    return reply.type('text/javascript; charset=utf-8').send(script);
  });
};

export interface PasskeyFormRouteOptions {
  passkeys: PasskeyService;
  users: UserService;
  config: Config;
  clock: Clock;
}

const csrfField = z.string().max(200).optional();
const idField = z.string().min(1).max(64);

/**
 * A dashboard form: signed in (or back to sign-in, then the dashboard), reachable during
 * enrolment; a refusal goes the way of the form's other errors (`formErrorPage`: back to the
 * dashboard with its code).
 */
const dashboardForm = (requires: readonly string[]) => ({
  formErrorPage: DASHBOARD,
  access: access.user({
    exempt: [DURING_ENROLMENT],
    requires,
    refusalPage: (_request, _reply, code) => {
      throw new AppError(code as ErrorCode);
    },
  }),
});

/**
 * The dashboard's Rename and Remove forms, posted without JavaScript. Both need a recent second
 * factor from a user who has one, as every change posted under /dashboard/passkeys always has;
 * removing also needs a recent sign-in, as `DELETE /api/auth/passkeys/:id` does.
 */
export const passkeyFormRoutes: FastifyPluginAsyncZod<PasskeyFormRouteOptions> = async (app, { passkeys, users }) => {
  const hidden = { hide: true } as const;

  app.post(
    '/dashboard/passkeys/rename',
    { config: dashboardForm([RECENT_SECOND_FACTOR]), schema: { ...hidden, body: z.object({ id: idField, name: passkeyName, csrfToken: csrfField }, { error: 'must be a JSON object' }) } },
    async (request, reply) => {
      const auth = signedIn(request);
      const renamed = await passkeys.rename(auth.userId, request.body.id, request.body.name, requestSource(request, auth.userId));
      if (renamed === null) throw new AppError('PASSKEY_NOT_FOUND');
      return reply.redirect(DASHBOARD_PASSKEYS, 303);
    },
  );

  app.post(
    '/dashboard/passkeys/remove',
    { config: dashboardForm([RECENT_SECOND_FACTOR, RECENT_SIGN_IN]), schema: { ...hidden, body: z.object({ id: idField, csrfToken: csrfField }, { error: 'must be a JSON object' }) } },
    async (request, reply) => {
      const auth = signedIn(request);
      const user = await users.findUserById(auth.userId);
      if (user === null) return reply.redirect(signInRedirect(DASHBOARD), 303);
      if (!(await passkeys.remove(user, request.body.id, requestSource(request, auth.userId)))) throw new AppError('PASSKEY_NOT_FOUND');
      return reply.redirect(DASHBOARD_PASSKEYS, 303);
    },
  );
};
