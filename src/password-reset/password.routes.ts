/**
 * The password endpoints:
 * - `POST /api/auth/forgot-password` `{email}`: a reset link by mail; 202, the same body and timing
 *   whether or not the address has an account;
 * - `POST /api/auth/reset-password/validate` `{token}`: whether a link still works;
 * - `POST /api/auth/reset-password` `{token, password}`: a new password with a link's token;
 * - `POST /api/auth/change-password` `{currentPassword, newPassword}`: a signed-in user's own change.
 * JSON, or HTML forms from the hosted pages, which are answered with a 303 to the next page, or back
 * to the form with `?error=CODE` (and `&reason=` for a refused password). Register where form
 * bodies are parsed.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RequestLimits } from '../http/request-limits.ts';
import { AppError } from '../errors.ts';
import { emailField } from '../users/email.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { isFormPost } from '../http/forms.ts';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { PasswordRejection } from '../credentials/password-policy.ts';
import { FORGOT_PASSWORD_PAGE, RESET_PASSWORD_PAGE, type PasswordResetService } from './password-reset.service.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

/** Where a forgot-password form lands, account or not. */
export const FORGOT_PASSWORD_SENT_PAGE = '/auth/forgot-password/sent';
/** Where a reset form lands once the password is set: it tells the person to sign in. */
export const RESET_PASSWORD_DONE_PAGE = '/auth/reset-password/done';
const DASHBOARD_PAGE = HUB_PAGES.dashboard;
/** The dashboard's `?notice=` after a change through its form. */
export const PASSWORD_CHANGED_NOTICE = 'PASSWORD_CHANGED';

/** The 202 body, word for word the same whether or not the address has an account. */
export const FORGOT_PASSWORD_MESSAGE = 'If an account exists for this address, we have sent it a link to choose a new password.';

/** Bounds the argon2 input of a current password, as sign-in does. New ones are bounded by the policy. */
const MAX_PASSWORD_INPUT_LENGTH = 4096;

const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');
const csrfToken = z.string().max(200).optional().describe('Form posts and cookie-carrying requests: the CSRF token');
/** Any string: what is not a live token is INVALID_TOKEN (400), not a validation error. */
const resetToken = z.string({ error: required }).describe('The `token` query parameter of the reset link');
/** Judged by the password policy, after the token, so that a bad token is always a 400. */
const newPassword = z.string({ error: required }).describe('The new password: it must pass the password policy; a refusal says why (`errors[].reason`)');

const forgotPasswordBody = z.object({ email: emailField.describe('The account’s e-mail address'), csrfToken }, { error: 'must be a JSON object' }).meta({ id: 'ForgotPasswordRequest' });
const validateBody = z.object({ token: resetToken }, { error: 'must be a JSON object' }).meta({ id: 'ResetTokenRequest' });
const resetBody = z.object({ token: resetToken, password: newPassword, csrfToken }, { error: 'must be a JSON object' }).meta({ id: 'ResetPasswordRequest' });
const changeBody = z
  .object(
    {
      currentPassword: z.string({ error: required }).min(1, 'is required').max(MAX_PASSWORD_INPUT_LENGTH, `must be at most ${MAX_PASSWORD_INPUT_LENGTH} characters`),
      newPassword,
      csrfToken,
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'ChangePasswordRequest' });

const accepted = z
  .object({ ok: z.literal(true), message: z.string() })
  .describe('The same whether or not the address has an account')
  .meta({ id: 'ForgotPasswordAccepted' });
const ok = z.object({ ok: z.literal(true) });
const tokenErrors = {
  400: errorResponse.describe('The link’s token is not live: INVALID_TOKEN (unknown, used, or replaced by a newer link) or TOKEN_EXPIRED; or MALFORMED_JSON'),
};
const weakPassword = {
  422: errorResponse.describe('VALIDATION_ERROR: a missing field, or a refused new password (`errors[].reason` says why: TOO_SHORT, TOO_LONG, TOO_COMMON, CONTAINS_IDENTITY, TOO_GUESSABLE)'),
};
const formRedirect = (to: string) => z.null().describe(`Form post: to ${to}, or back to the form with ?error=CODE`);

/** INVALID_TOKEN is 401 elsewhere (refresh tokens); a reset link's is a 400, as the contract says. */
function linkError(reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED'): AppError {
  return reason === 'TOKEN_EXPIRED'
    ? new AppError('TOKEN_EXPIRED', { message: 'This password reset link has expired. Ask for a new one.' })
    : new AppError('INVALID_TOKEN', { status: 400, message: 'This password reset link is not valid: it was used already, or a newer link replaced it.' });
}

function refusedPassword(field: string, rejection: PasswordRejection): AppError {
  return new AppError('VALIDATION_ERROR', { errors: [{ field, message: rejection.message, reason: rejection.reason }] });
}

/** A form's way back to its page with a refused password's reason (never anything the person typed). */
function refusalQuery(rejection: PasswordRejection): Record<string, string> {
  return { error: 'VALIDATION_ERROR', reason: rejection.reason };
}

export interface PasswordRouteOptions {
  passwordReset: PasswordResetService;
  credentials: CredentialsService;
  limits: RequestLimits;
}

export const passwordRoutes: FastifyPluginAsyncZod<PasswordRouteOptions> = async (app, { passwordReset, credentials, limits }) => {
  app.post(
    '/api/auth/forgot-password',
    {
      config: { access: access.anyone(), formErrorPage: FORGOT_PASSWORD_PAGE, formKeptFields: ['email'] },
      preHandler: limits.forgotPassword,
      schema: {
        tags: ['password'],
        summary: 'Ask for a password reset link by e-mail (202, the same whether or not the address has an account)',
        description:
          'An enabled account with this address (with or without a password) is sent a single-use link to ' +
          `\`${RESET_PASSWORD_PAGE}?token=…\` under AUTH_URL; a newer link replaces older ones. ` +
          'The answer does not depend on the address: same status, body and timing.',
        body: forgotPasswordBody,
        response: { 202: accepted, 303: formRedirect(FORGOT_PASSWORD_SENT_PAGE), ...bodyErrorResponses, 403: errorResponse.describe('CSRF_FAILED') },
      },
    },
    async (request, reply) => {
      await passwordReset.requestReset({ email: request.body.email, source: requestSource(request, null) });
      if (isFormPost(request)) return reply.redirect(FORGOT_PASSWORD_SENT_PAGE, 303);
      return reply.code(202).send({ ok: true as const, message: FORGOT_PASSWORD_MESSAGE });
    },
  );

  app.post(
    '/api/auth/reset-password/validate',
    {
      config: { access: access.anyone() },
      preHandler: limits.tokenUse,
      schema: {
        tags: ['password'],
        summary: 'Whether a reset link’s token still works (it is not used up)',
        body: validateBody,
        response: { 200: z.object({ valid: z.literal(true) }).meta({ id: 'ResetTokenValid' }), ...bodyErrorResponses, ...tokenErrors },
      },
    },
    async (request) => {
      const checked = await passwordReset.checkToken(request.body.token);
      if (!checked.ok) throw linkError(checked.reason);
      return { valid: true as const };
    },
  );

  app.post(
    '/api/auth/reset-password',
    {
      config: { access: access.anyone(), formErrorPage: RESET_PASSWORD_PAGE },
      preHandler: limits.tokenUse,
      schema: {
        tags: ['password'],
        summary: 'Set a new password with a reset link’s token; ends every session of the account',
        description:
          'The token is checked first (400), then the password policy (422; the token stays usable). On success the token is ' +
          'used up, the password replaced, every session of the account ended and a notice mailed, all at once. Nobody is signed in. ' +
          'When providers are linked to the account, the notice names them with a link to a page that removes each (`/auth/linked-accounts?token=…`, ' +
          'live 7 days), and a form post lands on `/auth/reset-password/done?token=…`, which lists them with a button each.',
        body: resetBody,
        response: {
          200: ok,
          303: formRedirect(RESET_PASSWORD_DONE_PAGE),
          ...bodyErrorResponses,
          ...tokenErrors,
          ...weakPassword,
          403: errorResponse.describe('CSRF_FAILED'),
          429: errorResponse.describe('Too many uses of links from this client, or too many refused new passwords for this account or from this client (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const { token, password } = request.body;
      const result = await passwordReset.resetPassword({ token, password, source: requestSource(request, null) });
      const isForm = isFormPost(request);
      if (result.ok) {
        if (!isForm) return { ok: true as const };
        // With providers linked, the confirmation lists them, each removable (the review token rides along as `token`, which request logs mask).
        const review = result.linkReviewToken === null ? '' : `?${new URLSearchParams({ token: result.linkReviewToken })}`;
        return reply.redirect(`${RESET_PASSWORD_DONE_PAGE}${review}`, 303);
      }
      if (result.reason === 'WEAK_PASSWORD') {
        // Back to the same link's form: the token is still good, only the password was refused.
        if (isForm) return reply.redirect(`${RESET_PASSWORD_PAGE}?${new URLSearchParams({ token, ...refusalQuery(result.rejection) })}`, 303);
        throw refusedPassword('password', result.rejection);
      }
      if (result.reason === 'RATE_LIMITED') throw new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
      // A form post goes to the page with ?error=CODE (formErrorPage), without the dead token.
      throw linkError(result.reason);
    },
  );

  app.post(
    '/api/auth/change-password',
    {
      // A stolen session that never used the user's second factor must not set a password of its own.
      config: { access: access.user({ requires: [RECENT_SECOND_FACTOR] }), formErrorPage: DASHBOARD_PAGE },
      schema: {
        tags: ['password'],
        summary: 'Change your password (signed in); ends your other sessions',
        description: 'The current password must be right (401 INVALID_CREDENTIALS), the new one must pass the policy (422). This session stays signed in; a notice is mailed.',
        security: [{ bearer: [] }],
        body: changeBody,
        response: {
          200: ok,
          303: formRedirect(`${DASHBOARD_PAGE}?notice=${PASSWORD_CHANGED_NOTICE}`),
          ...bodyErrorResponses,
          ...weakPassword,
          401: errorResponse.describe('No valid session (UNAUTHENTICATED), or a wrong current password (INVALID_CREDENTIALS)'),
          403: errorResponse.describe('Cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
          429: errorResponse.describe('Too many wrong current passwords, the password is locked, or too many refused new passwords (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const result = await credentials.changePassword({
        userId: auth.userId,
        sessionId: auth.sessionId,
        currentPassword: request.body.currentPassword,
        newPassword: request.body.newPassword,
        source: requestSource(request, auth.userId),
      });
      const isForm = isFormPost(request);
      if (result.ok) return isForm ? reply.redirect(`${DASHBOARD_PAGE}?notice=${PASSWORD_CHANGED_NOTICE}`, 303) : { ok: true as const };
      if (result.reason === 'WEAK_PASSWORD') {
        if (isForm) return reply.redirect(`${DASHBOARD_PAGE}?${new URLSearchParams(refusalQuery(result.rejection))}`, 303);
        throw refusedPassword('newPassword', result.rejection);
      }
      if (result.reason === 'RATE_LIMITED') throw new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
      throw new AppError('INVALID_CREDENTIALS', { message: 'The current password is not correct.' });
    },
  );
};
