/**
 * The review link of a password reset (its notice mail, its confirmation page): the providers that
 * were linked to the account when the password was reset, each removed in one step, without a
 * session (the reset ended them all). A provider linked by someone who held a stolen session would
 * otherwise let them sign in again after the owner's reset.
 * - `GET /auth/linked-accounts?token=` lists them (looking uses nothing up: mail scanners fetch links);
 * - `POST /api/auth/linked-accounts/remove` `{token, provider}` removes one, mails the owner and ends
 *   every session of the account (one signed in through that provider since the reset included).
 * The token stays live for its 7 days, for the other providers; a newer reset replaces it.
 * Register this plugin where form bodies are parsed.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RequestLimits } from '../http/request-limits.ts';
import { AppError } from '../errors.ts';
import { errorResponse } from '../http/schemas.ts';
import { isFormPost } from '../http/forms.ts';
import { requestSource } from '../audit/request-source.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { firstValue, shownCode } from '../web/page-query.ts';
import { LINK_REVIEW_PAGE, type LinkedAccount, type OAuthService } from './oauth.service.ts';

interface LinkReviewPages {
  'linked-accounts': {
    csrfToken: string;
    /** Null when the link is not live (`problem` says why). */
    review: { token: string; accounts: LinkedAccount[] } | null;
    problem: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' | null;
    /** What the last post did: removed, or why not. */
    notice: 'PROVIDER_UNLINKED' | null;
    error: 'NOT_FOUND' | 'LAST_SIGN_IN_METHOD' | null;
  };
}

export interface LinkReviewRouteOptions {
  oauth: OAuthService;
  limits: RequestLimits;
}

const linkToken = z.preprocess(firstValue, z.string()).optional();
const removeBody = z.object({
  token: z.string().max(200).describe('The review link’s token'),
  provider: z.string().max(64).describe('The provider to remove, by id (`github`, `google`, `oidc`)'),
  csrfToken: z.string().max(200).optional().describe('Form posts: the CSRF token'),
});

const PAGE_ERRORS = new Set(['NOT_FOUND', 'LAST_SIGN_IN_METHOD'] as const);

export const linkReviewRoutes: FastifyPluginAsyncZod<LinkReviewRouteOptions> = async (app, { oauth, limits }) => {
  const pages = createPageRenderer<LinkReviewPages>(templatesIn(join(import.meta.dirname, 'templates')));

  app.get(
    LINK_REVIEW_PAGE,
    { config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) }, schema: { hide: true, querystring: z.object({ token: linkToken, notice: shownCode, error: shownCode }) } },
    async (request, reply) => {
      const { token, notice, error } = request.query;
      const opened = await oauth.openLinkReview(token);
      return pages.send(
        reply,
        'linked-accounts',
        {
          title: reply.page.i18n.t('oauth.review.title'),
          review: opened.ok ? { token: token!, accounts: opened.accounts } : null,
          problem: opened.ok ? null : opened.reason,
          notice: notice === 'PROVIDER_UNLINKED' ? notice : null,
          error: error !== undefined && (PAGE_ERRORS as Set<string>).has(error) ? (error as 'NOT_FOUND' | 'LAST_SIGN_IN_METHOD') : null,
        },
        { urlHoldsToken: true },
      );
    },
  );

  app.post(
    '/api/auth/linked-accounts/remove',
    {
      // No session: the review link's token is the proof.
      config: { access: access.anyone() },
      preHandler: limits.tokenUse,
      schema: {
        tags: ['oauth'],
        summary: 'Remove a linked provider with a password reset’s review link (no session needed)',
        description:
          'The review link comes with a password reset (its notice mail and its confirmation page) and removes the providers that were linked ' +
          'then, one per request, for 7 days. The owner is mailed, and every session of the account ends. A form post goes back to ' +
          `\`${LINK_REVIEW_PAGE}?token=…\` with \`notice=PROVIDER_UNLINKED\` or \`error=CODE\`.`,
        body: removeBody,
        response: {
          200: z.object({ ok: z.literal(true) }),
          303: z.null().describe(`Form post: back to ${LINK_REVIEW_PAGE}`),
          400: errorResponse.describe('The review link is not live: INVALID_TOKEN (unknown, or replaced by a newer reset) or TOKEN_EXPIRED; or a malformed body'),
          403: errorResponse.describe('CSRF_FAILED'),
          404: errorResponse.describe('That provider is not linked, or was linked after the reset (NOT_FOUND)'),
          409: errorResponse.describe('LAST_SIGN_IN_METHOD'),
          422: errorResponse.describe('VALIDATION_ERROR'),
          429: errorResponse.describe('RATE_LIMITED, with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const { token, provider } = request.body;
      const result = await oauth.unlinkWithReview(token, provider, requestSource(request, null));
      if (isFormPost(request)) {
        if (!result.ok && (result.reason === 'INVALID_TOKEN' || result.reason === 'TOKEN_EXPIRED')) return reply.redirect(`${LINK_REVIEW_PAGE}?${new URLSearchParams({ token })}`, 303);
        const outcome: [string, string] = result.ok ? ['notice', 'PROVIDER_UNLINKED'] : ['error', result.reason];
        return reply.redirect(`${LINK_REVIEW_PAGE}?${new URLSearchParams([['token', token], outcome])}`, 303);
      }
      if (result.ok) return { ok: true as const };
      if (result.reason === 'INVALID_TOKEN') throw new AppError('INVALID_TOKEN', { status: 400, message: 'This link is not valid: a newer password reset replaced it.' });
      throw new AppError(result.reason);
    },
  );
};
