/**
 * `POST /api/auth` (the seed's contract: a token for API clients) and `POST /api/auth/signin`
 * (the same, and it sets the browser session cookie).
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { emailField } from '../users/email.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { setSessionCookie } from '../http/session-cookie.ts';
import type { Clock } from '../lib/clock.ts';
import type { CredentialsService } from './credentials.service.ts';

const MAX_PASSWORD_INPUT_LENGTH = 4096;

const signInBody = z
  .object(
    {
      email: emailField.describe('E-mail address; compared after trimming, NFKC and lower-casing'),
      password: z
        .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
        .min(1, 'is required')
        .max(MAX_PASSWORD_INPUT_LENGTH, `must be at most ${MAX_PASSWORD_INPUT_LENGTH} characters`),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'AuthRequest' });

const userSummary = z.object({ id: z.string(), email: z.string(), name: z.string() }).meta({ id: 'UserSummary' });

const signInResponse = z
  .object({
    token: z.string().describe('Access token: an EdDSA-signed JWT. Send it as `Authorization: Bearer <token>`'),
    user: userSummary,
    refreshToken: z.string().describe('Opaque refresh token for this session'),
    expiresAt: z.iso.datetime().describe('When the access token expires'),
  })
  .meta({ id: 'AuthResponse' });

const signInErrors = {
  ...bodyErrorResponses,
  401: errorResponse.describe('Wrong e-mail or password (INVALID_CREDENTIALS); identical for unknown addresses'),
  403: errorResponse.describe('Correct password, but the account is disabled (ACCOUNT_DISABLED)'),
};

export const signInRoutes: FastifyPluginAsyncZod<{ credentials: CredentialsService; config: Config; clock: Clock }> = async (app, options) => {
  const { credentials, config, clock } = options;

  for (const { url, setsCookie, summary } of [
    { url: '/api/auth', setsCookie: false, summary: 'Sign in with e-mail and password; returns a JWT' },
    { url: '/api/auth/signin', setsCookie: true, summary: 'Sign in with e-mail and password; returns a JWT and sets the session cookie' },
  ]) {
    app.post(
      url,
      {
        schema: {
          tags: ['auth'],
          summary,
          body: signInBody,
          response: { 200: signInResponse, ...signInErrors },
        },
      },
      async (request, reply) => {
        void reply.header('cache-control', 'no-store');
        const result = await credentials.signIn({
          email: request.body.email,
          password: request.body.password,
          ip: request.ip,
          userAgent: request.headers['user-agent'] ?? null,
        });
        if (!result.ok) throw new AppError(result.reason);

        const { user, session } = result;
        if (setsCookie) setSessionCookie(reply, config, session.accessToken, session.accessTokenExpiresAt, clock());
        return {
          token: session.accessToken,
          user: { id: user.id, email: user.email, name: user.name },
          refreshToken: session.refreshToken,
          expiresAt: new Date(session.accessTokenExpiresAt).toISOString(),
        };
      },
    );
  }
};
