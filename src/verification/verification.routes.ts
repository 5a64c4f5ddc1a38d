/**
 * `POST /api/auth/verify-email` (the button on the page a verification link opens) and
 * `POST /api/auth/verify-email/resend`. Both take JSON or an HTML form: a form is answered with a
 * 303 to a page, or back to the verification page with `?error=CODE`. Register them where form
 * bodies are parsed.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RequestLimits } from '../http/request-limits.ts';
import { AppError } from '../errors.ts';
import { emailField } from '../users/email.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { isFormPost } from '../http/forms.ts';
import { requestSource } from '../audit/request-source.ts';
import { access } from '../authorization/access.ts';
import { VERIFY_EMAIL_PAGE, type VerificationService } from './verification.service.ts';

export { VERIFY_EMAIL_PAGE };
/** Where a form verification lands when it worked. */
export const EMAIL_VERIFIED_PAGE = '/auth/email-verified';
/** Where a form sign-up or resend lands, whatever happened: "check your inbox". */
export const CHECK_EMAIL_PAGE = '/auth/check-email';

export const RESEND_ACCEPTED_MESSAGE = 'If this address has an account waiting for verification, a new link is on its way. Earlier links no longer work.';

const csrfToken = z.string().max(200).optional().describe('Form posts: the CSRF token');

const verifyBody = z
  .object(
    {
      token: z
        .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
        .min(1, 'is required')
        .max(512, 'is too long')
        .describe('The token from the verification link'),
      csrfToken,
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'VerifyEmailRequest' });

const resendBody = z
  .object({ email: emailField.describe('The address to verify'), csrfToken }, { error: 'must be a JSON object' })
  .meta({ id: 'ResendVerificationRequest' });

export const verificationRoutes: FastifyPluginAsyncZod<{ verification: VerificationService; limits: RequestLimits }> = async (app, { verification, limits }) => {
  app.post(
    '/api/auth/verify-email',
    {
      config: { access: access.anyone(), formErrorPage: VERIFY_EMAIL_PAGE },
      preHandler: limits.tokenUse,
      schema: {
        tags: ['auth'],
        summary: 'Verify an e-mail address with the token from its link; the token is used up',
        body: verifyBody,
        response: {
          200: z.object({ ok: z.literal(true) }).meta({ id: 'VerifyEmailResponse' }),
          303: z.null().describe(`Form post: to ${EMAIL_VERIFIED_PAGE}, or to ${VERIFY_EMAIL_PAGE}?error=CODE`),
          ...bodyErrorResponses,
          400: errorResponse.describe('The token is unknown, used or replaced (INVALID_TOKEN), or expired (TOKEN_EXPIRED); or MALFORMED_JSON'),
          403: errorResponse.describe('CSRF_FAILED'),
        },
      },
    },
    async (request, reply) => {
      const result = await verification.verifyEmail(request.body.token, requestSource(request, null));
      // INVALID_TOKEN is 401 on refresh; here, as for reset links, it is a bad request.
      if (!result.ok) throw new AppError(result.reason, { status: 400 });
      if (isFormPost(request)) return reply.redirect(EMAIL_VERIFIED_PAGE, 303);
      return { ok: true as const };
    },
  );

  app.post(
    '/api/auth/verify-email/resend',
    {
      config: { access: access.anyone(), formErrorPage: VERIFY_EMAIL_PAGE, formKeptFields: ['email'] },
      preHandler: limits.verificationResend,
      schema: {
        tags: ['auth'],
        summary: 'Send a new verification link (202, the same whether or not the address has an unverified account)',
        body: resendBody,
        response: {
          202: z.object({ ok: z.literal(true), message: z.string() }).meta({ id: 'ResendVerificationAccepted' }),
          303: z.null().describe(`Form post: to ${CHECK_EMAIL_PAGE}`),
          ...bodyErrorResponses,
          403: errorResponse.describe('CSRF_FAILED'),
        },
      },
    },
    async (request, reply) => {
      await verification.resendVerificationMail(request.body.email, requestSource(request, null));
      if (isFormPost(request)) return reply.redirect(CHECK_EMAIL_PAGE, 303);
      return reply.code(202).send({ ok: true as const, message: RESEND_ACCEPTED_MESSAGE });
    },
  );
};
