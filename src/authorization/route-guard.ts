/**
 * The service's own route guard: the shared rules (rules.ts) applied to every request before its
 * handler, with the session resolved by the strategy-aware authenticator. API paths are denied
 * with JSON (401 UNAUTHENTICATED / 403 FORBIDDEN); pages redirect to sign-in, or show a 403 page.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import type { RequestAuthenticator } from '../sessions/request-authentication.ts';
import { syncFirstHook } from '../http/sync-first-hook.ts';
import { GATEHOUSE_RULES, decidePath, isApiRequestPath, readRequestPath, type Decision, type ProtectionRules, type RequestPath } from '../../packages/protect/src/rules.ts';

const NO_ROLES = Object.freeze({ roles: Object.freeze([]) });

export function registerRouteGuard(
  app: FastifyInstance,
  options: { authenticate: RequestAuthenticator; sendForbiddenPage: (reply: FastifyReply) => FastifyReply; rules?: ProtectionRules },
): void {
  const { authenticate, sendForbiddenPage } = options;
  const rules = options.rules ?? GATEHOUSE_RULES;

  // Decide first without a user: most paths are public, and those cost no session lookup (nor a promise).
  app.addHook(
    'onRequest',
    syncFirstHook((request, reply) => {
      const path = readRequestPath(request.url);
      const decision = decidePath(path, null, rules);
      return decision.action === 'allow' ? undefined : guard(request, reply, path, decision);
    }),
  );

  async function guard(request: FastifyRequest, reply: FastifyReply, path: RequestPath | null, anonymous: Decision) {
    let decision = anonymous;
    if (decision.action === 'deny' && decision.reason === 'UNAUTHENTICATED') {
      // A path that needs a role is decided on the roles the user holds now, not those a token
      // was issued with (jwt strategy): a role taken away takes its powers away at once.
      const needsRole = decidePath(path, NO_ROLES, rules).action === 'deny';
      const auth = needsRole ? await authenticate.withCurrentRoles(request, reply) : await authenticate(request, reply);
      decision = decidePath(path, auth, rules);
    }
    if (decision.action === 'allow') return;

    if (isApiRequestPath(path) || decision.reason === 'BAD_REQUEST') throw new AppError(decision.reason);
    if (decision.reason === 'UNAUTHENTICATED') {
      // Come back to a page, never to a form's target (it answers only POST).
      const isPageLoad = request.method === 'GET' || request.method === 'HEAD';
      return reply.redirect(signInRedirect(isPageLoad ? request.url : undefined), 303);
    }
    return sendForbiddenPage(reply);
  }
}
