/**
 * The routes of the data export (data-export.service.ts), each answering the export as a JSON
 * download (`Content-Disposition: attachment; filename="gatehouse-export-<date>.json"`, never
 * cached):
 * - `GET /api/auth/account/export`: the signed-in user's own (Bearer, or the session cookie); a
 *   sign-in within REAUTH_WINDOW (`RECENT_SIGN_IN`), in person (`IN_PERSON`: not while an
 *   administrator acts as them), at most EXPORTS_PER_HOUR an hour.
 * - `GET /dashboard/account/export`: the same, for the dashboard's "Download your data" button;
 *   a sign-in that is not recent is sent to sign in again, and back here.
 * - `GET /api/admin/users/:id/export`: an administrator exports a user's (a current ADMIN, with
 *   a recent second factor), audited with the administrator as actor.
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError, type ErrorCode } from '../errors.ts';
import { errorResponse } from '../http/schemas.ts';
import { requestSource } from '../audit/request-source.ts';
import { access, IN_PERSON, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn } from '../authorization/access.ts';
import { rateLimitHook, type RateLimiters } from '../http/rate-limit.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import type { AccountExport, DataExportService } from './data-export.service.ts';
import { exportFileName, EXPORT_FORMAT } from './data-export.format.ts';

/** How many exports one user may take an hour (the export walks every module: it is not free). */
export const EXPORTS_PER_HOUR = 10;
export const EXPORT_PAGE = '/dashboard/account/export';

export interface DataExportRouteOptions {
  dataExport: DataExportService;
  rateLimiters: RateLimiters;
}

const accountExport = z
  .object({
    format: z.literal(EXPORT_FORMAT),
    exportedAt: z.string().describe('When the export was made (ISO 8601)'),
    user: z.record(z.string(), z.unknown()).describe('The account: id, email, name, roles, dates'),
    modules: z.record(z.string(), z.record(z.string(), z.unknown())).describe('What each module holds of the user, by module name (sessions, credentials, oauth, passkeys, mfa, organizations, oidc-provider, audit…); never a secret or a hash'),
  })
  .meta({ id: 'AccountExport' });

/** Sends the export as a file to download. */
function download(reply: FastifyReply, document: AccountExport): AccountExport {
  void reply
    .header('content-type', 'application/json; charset=utf-8')
    .header('content-disposition', `attachment; filename="${exportFileName(document.exportedAt)}"`)
    .header('cache-control', 'no-store');
  return document;
}

export const dataExportRoutes: FastifyPluginAsyncZod<DataExportRouteOptions> = async (app, { dataExport, rateLimiters }) => {
  const perUser = rateLimitHook([{ limiter: rateLimiters.create('account-export', { points: EXPORTS_PER_HOUR, durationSeconds: 3_600 }), key: (request) => signedIn(request).userId }]);

  async function ownExport(request: FastifyRequest, reply: FastifyReply): Promise<AccountExport> {
    const auth = signedIn(request);
    const document = await dataExport.exportAccount(auth.userId, { source: requestSource(request, auth.userId), by: 'self' });
    if (document === null) throw new AppError('UNAUTHENTICATED');
    return download(reply, document);
  }

  app.get(
    '/api/auth/account/export',
    {
      config: { access: access.user({ requires: [RECENT_SIGN_IN, IN_PERSON] }) },
      preHandler: perUser,
      schema: {
        tags: ['account'],
        summary: 'Download everything Gatehouse holds about you',
        description: `A JSON document (\`format\`: \`${EXPORT_FORMAT}\`, see docs/guides/data-export.md) offered as a file: your account, and what every module holds of you (sessions, sign-in methods, linked accounts, passkeys, second factors, organizations, connected apps, the audit events about you, newest first and capped), never a secret, a hash or a key. Needs a sign-in within REAUTH_WINDOW (403 REAUTH_REQUIRED) made by you (403 IMPERSONATION_FORBIDDEN_ACTION while an administrator acts as you); ${EXPORTS_PER_HOUR} an hour (429). Audited (account.exported).`,
        security: [{ bearer: [] }],
        response: {
          200: accountExport,
          401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
          403: errorResponse.describe('Signed in longer ago than REAUTH_WINDOW (REAUTH_REQUIRED), or an administrator acting as you (IMPERSONATION_FORBIDDEN_ACTION)'),
          429: errorResponse.describe('Too many exports (RATE_LIMITED)'),
        },
      },
    },
    ownExport,
  );

  app.get(
    EXPORT_PAGE,
    {
      config: {
        access: access.user({
          requires: [RECENT_SIGN_IN, IN_PERSON],
          // A sign-in that is not recent signs in again and comes back here; any other refusal is the error page.
          refusalPage: (_request, reply, code) => (code === 'REAUTH_REQUIRED' ? reply.redirect(signInRedirect(EXPORT_PAGE), 303) : Promise.reject(new AppError(code as ErrorCode))),
        }),
      },
      preHandler: perUser,
      schema: { hide: true },
    },
    ownExport,
  );

  app.get(
    '/api/admin/users/:id/export',
    {
      config: { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) },
      schema: {
        tags: ['admin'],
        summary: 'Export everything Gatehouse holds about a user (audited)',
        description: 'The document `GET /api/auth/account/export` gives a user of their own, offered as a file; recorded as account.exported about the user, with you as actor.',
        security: [{ bearer: [] }],
        params: z.object({ id: z.string().min(1).max(64) }),
        response: {
          200: accountExport,
          401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
          403: errorResponse.describe('Not an ADMIN now (FORBIDDEN), a second factor needed (STEP_UP_REQUIRED, REAUTH_REQUIRED), or CSRF_FAILED'),
          404: errorResponse.describe('No such user (NOT_FOUND)'),
        },
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const document = await dataExport.exportAccount(request.params.id, { source: requestSource(request, auth.userId), by: 'admin' });
      if (document === null) throw new AppError('NOT_FOUND');
      return download(reply, document);
    },
  );
};
