/**
 * The administrators' areas (`/admin/*` pages, `/api/admin/*` routes, whichever module serves
 * them) admit holders of ADMIN as they hold it now, not as a jwt-strategy token was issued: a
 * demoted admin's token reaches nothing there. One rule for every module that adds such a route.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import type { RequestAuth, RequestAuthenticator } from '../sessions/request-authentication.ts';
import type { AuditSource } from '../audit/audit.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { createForbiddenPage } from '../web/forbidden-page.ts';

/**
 * For admin JSON routes: before the body and query are validated (who may not ask learns nothing
 * about the shape), 401 without a session and 403 without the role. Returns how a handler reads
 * the admin it acts as, for the audit log (the answer is cached per request).
 */
export function requireAdminApi(app: FastifyInstance, authenticate: RequestAuthenticator): (request: FastifyRequest, reply: FastifyReply) => Promise<AuditSource> {
  app.addHook('preValidation', async (request, reply) => {
    const auth = await authenticate.withCurrentRoles(request, reply);
    if (auth === null) throw new AppError('UNAUTHENTICATED');
    if (!auth.roles.includes(ADMIN_ROLE)) throw new AppError('FORBIDDEN');
  });
  return async (request, reply) => {
    const auth = await authenticate.withCurrentRoles(request, reply);
    if (auth === null) throw new AppError('UNAUTHENTICATED');
    return requestSource(request, auth.userId);
  };
}

/**
 * For admin pages: anyone but an ADMIN is refused on every request of the plugin (without a
 * session, sign-in, coming back to a page but never to a form's target; without the role, the 403
 * page). Returns how a handler reads the admin it acts as.
 */
export function requireAdminPages(app: FastifyInstance, authenticate: RequestAuthenticator): (request: FastifyRequest, reply: FastifyReply) => Promise<RequestAuth> {
  const sendForbiddenPage = createForbiddenPage();
  app.addHook('onRequest', async (request, reply) => {
    const auth = await authenticate.withCurrentRoles(request, reply);
    if (auth === null) {
      const isPageLoad = request.method === 'GET' || request.method === 'HEAD';
      return reply.redirect(signInRedirect(isPageLoad ? request.url : undefined), 303);
    }
    if (!auth.roles.includes(ADMIN_ROLE)) return sendForbiddenPage(reply);
  });
  return async (request, reply) => {
    const auth = await authenticate.withCurrentRoles(request, reply);
    if (auth === null || !auth.roles.includes(ADMIN_ROLE)) throw new Error('admin page reached without an ADMIN session');
    return auth;
  };
}
