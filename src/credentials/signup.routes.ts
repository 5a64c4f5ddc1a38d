/**
 * `POST /api/auth/signup`: JSON, or an HTML form from `/auth/signup` (303 to the "check your
 * inbox" page, or back to the form with `?error=CODE`). The answer is the same 202 for a new and a
 * taken address. Register it where form bodies are parsed.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RequestLimits } from '../http/request-limits.ts';
import { AppError } from '../errors.ts';
import { emailField } from '../users/email.ts';
import { MAX_NAME_LENGTH, nameField } from '../users/name.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { isFormPost } from '../http/forms.ts';
import { requestSource } from '../audit/request-source.ts';
import { access } from '../authorization/access.ts';
import { CHECK_EMAIL_PAGE } from '../verification/verification.routes.ts';
import type { SignupService } from './signup.service.ts';

export const SIGNUP_PAGE = '/auth/signup';

const MAX_PASSWORD_INPUT_LENGTH = 4096;
export { MAX_NAME_LENGTH };

const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');

const signupBody = z
  .object(
    {
      email: emailField.describe('E-mail address; stored after trimming, NFKC and lower-casing'),
      password: z
        .string({ error: required })
        .min(1, 'is required')
        .max(MAX_PASSWORD_INPUT_LENGTH, `must be at most ${MAX_PASSWORD_INPUT_LENGTH} characters`)
        .describe('Must pass the password policy (length, not easy to guess); a refusal names the reason'),
      name: nameField.describe('Display name: no control, invisible formatting or line separator characters'),
      csrfToken: z.string().max(200).optional().describe('Form posts: the CSRF token'),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'SignupRequest' });

export const SIGNUP_ACCEPTED_MESSAGE = 'Check your inbox: we have sent a message to this address with the next step.';

const acceptedResponse = z
  .object({ ok: z.literal(true), message: z.string() })
  .describe('The same for a new and a taken address')
  .meta({ id: 'SignupAccepted' });

export const signupRoutes: FastifyPluginAsyncZod<{ signup: SignupService; limits: RequestLimits }> = async (app, { signup, limits }) => {
  app.post(
    '/api/auth/signup',
    {
      // A refused form comes back with what was typed, except the password (http/form-values.ts).
      config: { access: access.anyone(), formErrorPage: SIGNUP_PAGE, formKeptFields: ['name', 'email'] },
      // Turned off means turned off, whatever the body holds (after the CSRF check, before validation).
      preValidation: async () => {
        if (!signup.isEnabled) throw new AppError('SIGNUP_DISABLED');
      },
      preHandler: limits.signup,
      schema: {
        tags: ['auth'],
        summary: 'Sign up with e-mail, password and name; a verification mail follows (202, the same whether or not the address is taken)',
        body: signupBody,
        response: {
          202: acceptedResponse,
          303: z.null().describe(`Form post: to ${CHECK_EMAIL_PAGE}, or to ${SIGNUP_PAGE}?error=CODE`),
          ...bodyErrorResponses,
          403: errorResponse.describe('Sign-up is turned off (SIGNUP_DISABLED); or CSRF_FAILED'),
          429: errorResponse.describe('Too many sign-ups, or too many refused passwords, from this client (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const { email, name, password } = request.body;
      const result = await signup.signUp({ email, name, password }, requestSource(request, null));
      if (!result.ok && result.reason === 'SIGNUP_DISABLED') throw new AppError('SIGNUP_DISABLED');
      if (!result.ok && result.reason === 'RATE_LIMITED') throw new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
      if (!result.ok) {
        // A form post goes back to the page with ?error=VALIDATION_ERROR&reason=<the refusal's code>
        // (formErrorPage): nothing the person typed goes in the URL.
        throw new AppError('VALIDATION_ERROR', { errors: [{ field: 'password', message: result.rejection.message, reason: result.rejection.reason }] });
      }
      if (isFormPost(request)) return reply.redirect(CHECK_EMAIL_PAGE, 303);
      return reply.code(202).send({ ok: true as const, message: SIGNUP_ACCEPTED_MESSAGE });
    },
  );
};
