/**
 * Session endpoints: the current session, refresh, the user's own sessions, sign-out, and the
 * CSRF token browsers need for their unsafe requests.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { RequestLimits } from '../http/request-limits.ts';
import { AppError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { clearSessionCookies } from './session-cookie.ts';
import { isFormPost } from '../http/forms.ts';
import { access, DURING_ENROLMENT, IN_PERSON, sessionOf, signedIn } from '../authorization/access.ts';
import type { Csrf } from '../http/csrf.ts';
import { requestSource } from '../audit/request-source.ts';
import type { SessionService } from './session.service.ts';
import { isoTime } from '../lib/clock.ts';

interface SessionRouteOptions {
  sessions: SessionService;
  csrf: Csrf;
  config: Config;
  limits: RequestLimits;
}


const sessionResponse = z
  .object({
    user: z.object({ id: z.string(), email: z.string(), name: z.string(), roles: z.array(z.string()) }),
    session: z.object({
      id: z.string(),
      expiresAt: z.iso.datetime().describe('Absolute end of the session'),
      amr: z.array(z.string()).describe('How the user proved who they are in this session (RFC 8176): pwd, fed, otp, hwk, swk, user, mfa; empty for sessions from before this was recorded'),
      authTime: z.iso.datetime().describe('When they last did: the sign-in, or a later step-up'),
    }),
    claims: z
      .record(z.string(), z.unknown())
      .describe('The claims modules add to access tokens, e.g. `org` ({id, slug, roles}: the active organization). SESSION_STRATEGY=jwt shows those of the presented token (current as of its last refresh); database reads them now'),
  })
  .meta({ id: 'Session' });

const refreshBody = z
  .object(
    { refreshToken: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }).min(1, 'is required').max(200, 'is too long') },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'RefreshRequest' });

const refreshResponse = z
  .object({
    token: z.string().describe('New access token'),
    refreshToken: z.string().describe('New refresh token; the one presented is now spent'),
    expiresAt: z.iso.datetime().describe('When the new access token expires'),
  })
  .meta({ id: 'RefreshResponse' });

const sessionList = z
  .object({
    sessions: z.array(
      z.object({
        id: z.string(),
        current: z.boolean().describe('This request was made with this session'),
        createdAt: z.iso.datetime(),
        lastSeenAt: z.iso.datetime(),
        expiresAt: z.iso.datetime(),
        ip: z.string().nullable(),
        userAgent: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'SessionList' });

const ok = z.object({ ok: z.literal(true) });
const unauthenticated = { 401: errorResponse.describe('No valid session (UNAUTHENTICATED)') };
const csrfFailure = { 403: errorResponse.describe('Cookie-authenticated request without a valid CSRF token (CSRF_FAILED)') };

export const sessionRoutes: FastifyPluginAsyncZod<SessionRouteOptions> = async (app, options) => {
  const { sessions, csrf, config, limits } = options;

  app.get(
    '/api/auth/session',
    {
      config: { access: access.user({ exempt: [DURING_ENROLMENT] }) },
      schema: { tags: ['sessions'], summary: 'The signed-in user and session', security: [{ bearer: [] }], response: { 200: sessionResponse, ...unauthenticated } },
    },
    async (request) => {
      const view = await sessions.describeSession(signedIn(request));
      if (view === null) throw new AppError('UNAUTHENTICATED');
      const { id, expiresAt, amr, authTime } = view.session;
      return { user: view.user, session: { id, expiresAt: isoTime(expiresAt), amr, authTime: isoTime(authTime) }, claims: view.claims };
    },
  );

  app.post(
    '/api/auth/refresh',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) },
      preHandler: limits.refresh,
      schema: {
        tags: ['sessions'],
        summary: 'Exchange a refresh token for a new access token and refresh token (rotation)',
        description: `The presented refresh token is spent. Presenting it again within ${config.sessions.refreshReuseGraceSeconds} s (concurrent tabs) returns the same successor; later, it ends the whole session (TOKEN_REUSED).`,
        body: refreshBody,
        response: {
          200: refreshResponse,
          ...bodyErrorResponses,
          401: errorResponse.describe('INVALID_TOKEN, or TOKEN_REUSED (the session has been ended)'),
        },
      },
    },
    async (request) => {
      const result = await sessions.refresh(request.body.refreshToken, { ip: request.ip, userAgent: request.headers['user-agent'] ?? null });
      if (!result.ok) throw new AppError(result.reason);
      const { session } = result;
      return { token: session.accessToken, refreshToken: session.refreshToken, expiresAt: isoTime(session.accessTokenExpiresAt) };
    },
  );

  app.get(
    '/api/auth/sessions',
    {
      config: { access: access.user() },
      schema: { tags: ['sessions'], summary: 'Your active sessions', security: [{ bearer: [] }], response: { 200: sessionList, ...unauthenticated } },
    },
    async (request) => {
      const auth = signedIn(request);
      const list = await sessions.listSessions(auth.userId);
      return {
        sessions: list.map((s) => ({
          id: s.id,
          current: s.id === auth.sessionId,
          createdAt: isoTime(s.createdAt),
          lastSeenAt: isoTime(s.lastSeenAt),
          expiresAt: isoTime(s.expiresAt),
          ip: s.ip,
          userAgent: s.userAgent,
        })),
      };
    },
  );

  app.delete(
    '/api/auth/sessions/:id',
    {
      config: { access: access.user({ requires: [IN_PERSON] }) },
      schema: {
        tags: ['sessions'],
        summary: 'End one of your sessions',
        security: [{ bearer: [] }],
        params: z.object({ id: z.string().max(64) }),
        response: { 200: ok, ...unauthenticated, ...csrfFailure, 404: errorResponse.describe('Not one of your active sessions (NOT_FOUND)') },
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      if (!(await sessions.endSession(auth.userId, request.params.id, requestSource(request, auth.userId)))) throw new AppError('NOT_FOUND', { message: 'No such active session.' });
      if (request.params.id === auth.sessionId && auth.via === 'cookie') clearSessionCookies(reply, config);
      return { ok: true as const };
    },
  );

  app.delete(
    '/api/auth/sessions',
    {
      config: { access: access.user({ requires: [IN_PERSON] }) },
      schema: {
        tags: ['sessions'],
        summary: 'End all your sessions (or all but this one with ?keepCurrent=true)',
        security: [{ bearer: [] }],
        querystring: z.object({ keepCurrent: z.enum(['true', 'false']).optional() }),
        response: { 200: z.object({ ok: z.literal(true), ended: z.number().int() }), ...unauthenticated, ...csrfFailure },
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const keepCurrent = request.query.keepCurrent === 'true';
      const source = requestSource(request, auth.userId);
      const ended = await sessions.endAllSessions(auth.userId, keepCurrent ? { source, exceptSessionId: auth.sessionId } : { source });
      if (!keepCurrent && auth.via === 'cookie') clearSessionCookies(reply, config);
      return { ok: true as const, ended };
    },
  );

  app.get(
    '/api/auth/csrf',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) },
      schema: { tags: ['sessions'], summary: 'A CSRF token for this browser (sets its cookie)', response: { 200: z.object({ csrfToken: z.string() }).meta({ id: 'CsrfToken' }) } },
    },
    async (request, reply) => ({ csrfToken: csrf.issueToken(request, reply) }),
  );
};

/**
 * `POST /api/auth/signout`: JSON (200 `{ok:true}`) or an HTML form (303 to `/`). Ends the
 * current session (Bearer token, or the browser's cookies); clears the cookies;
 * harmless without a session. Register it where form bodies are parsed.
 */
export const signOutRoutes: FastifyPluginAsyncZod<SessionRouteOptions> = async (app, options) => {
  const { sessions, config } = options;

  app.post(
    '/api/auth/signout',
    {
      // Harmless without a session: the cookies are cleared either way.
      config: { access: access.anyone({ readsSession: true, exempt: [DURING_ENROLMENT] }) },
      schema: {
        tags: ['sessions'],
        summary: 'Sign out: end the current session and clear the cookies',
        // No body at all is the usual request (Fastify presents it as null).
        body: z.object({ csrfToken: z.string().max(200).optional() }).nullish(),
        response: { 200: ok, 303: z.null().describe('Form post: to /'), ...csrfFailure },
      },
    },
    async (request, reply) => {
      // The session was resolved before the handler, which also covers an expired access cookie
      // with a live refresh cookie.
      const auth = sessionOf(request);
      if (auth !== null) await sessions.signOut(auth.userId, auth.sessionId, requestSource(request, auth.userId));
      clearSessionCookies(reply, config);
      if (isFormPost(request)) return reply.redirect('/', 303);
      return { ok: true as const };
    },
  );
};

