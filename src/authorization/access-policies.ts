/**
 * The modules' access policies (see `AccessPolicy` in module.ts), applied to every request after
 * the route guard. A request without a session passes (its route decides); a path a policy exempts
 * passes that policy only if both readings of the path (resolved and literal) are under an exempt
 * prefix, so `/api/auth/mfa/../../admin` is not exempt. API paths are refused with the policy's
 * code; a page load goes where the policy says, or gets the 403 page.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import type { AccessPolicy } from '../module.ts';
import type { RequestAuthenticator } from '../sessions/request-authentication.ts';
import { syncFirstHook } from '../http/sync-first-hook.ts';
import { isApiRequestPath, isUnder, readRequestPath, type RequestPath } from '../../packages/protect/src/rules.ts';

function isExempt(path: RequestPath | null, prefixes: readonly string[]): boolean {
  return path !== null && prefixes.some((prefix) => isUnder(path.resolved, prefix) && isUnder(path.literal, prefix));
}

/** Under one of `prefixes` by either reading (or unreadable): a policy limited to them applies. */
function isWithin(path: RequestPath | null, prefixes: readonly string[]): boolean {
  return path === null || prefixes.some((prefix) => isUnder(path.resolved, prefix) || isUnder(path.literal, prefix));
}

export function registerAccessPolicies(
  app: FastifyInstance,
  options: { policies: readonly AccessPolicy[]; authenticate: RequestAuthenticator; sendForbiddenPage: (reply: FastifyReply) => FastifyReply },
): void {
  const policies = options.policies.filter((policy) => policy.isActive);
  if (policies.length === 0) return;
  const { authenticate, sendForbiddenPage } = options;

  // Most requests fall under no policy: those go on without a promise.
  app.addHook(
    'onRequest',
    syncFirstHook((request, reply) => {
      const path = readRequestPath(request.url);
      const applicable = policies.filter((policy) => !isExempt(path, policy.exemptPrefixes) && (policy.onlyPrefixes === undefined || isWithin(path, policy.onlyPrefixes)));
      return applicable.length === 0 ? undefined : enforce(request, reply, path, applicable);
    }),
  );

  async function enforce(request: FastifyRequest, reply: FastifyReply, path: RequestPath | null, applicable: readonly AccessPolicy[]) {
    // The roles the user holds now, not those a jwt-strategy token was issued with: a user promoted
    // to a role the policy names is held to it at once (computed once per request).
    const auth = await authenticate.withCurrentRoles(request, reply);
    if (auth === null) return;
    for (const policy of applicable) {
      const refusal = await policy.check(auth, { path: path?.resolved ?? request.url, literalPath: path?.literal ?? request.url, method: request.method });
      if (refusal === null) continue;
      if (isApiRequestPath(path)) throw new AppError(refusal.code);
      const isPageLoad = request.method === 'GET' || request.method === 'HEAD';
      if (isPageLoad && refusal.redirectTo !== undefined) return reply.redirect(refusal.redirectTo, 303);
      return sendForbiddenPage(reply);
    }
  }
}
