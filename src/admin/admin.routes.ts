/**
 * `/api/admin/*`: users, roles, sessions and the audit log, for holders of the ADMIN role. Every
 * route declares it (`access.role(ADMIN_ROLE)`), so the caller is refused (401 UNAUTHENTICATED,
 * 403 FORBIDDEN) before the request is read; a change to a user also needs a recent second factor
 * from an admin who has one. Responses are built from declared schemas only, which strip every
 * undeclared field: a password hash or refresh seed can never reach a client.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import { bodyErrorResponses, errorResponse, keysetCursorField } from '../http/schemas.ts';
import { emailField } from '../users/email.ts';
import { nameField } from '../users/name.ts';
import { ADMIN_ROLE, isValidRole, type User } from '../users/user.service.ts';
import type { SessionSummary } from '../sessions/session.service.ts';
import type { AuditEvent, AuditEventType, AuditService } from '../audit/audit.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { decodeCursor, encodeCursor, type KeysetPosition } from '../lib/keyset-cursor.ts';
import type { AdminService } from './admin.service.ts';
import { toUserJson } from '../users/user-json.ts';
import { isoTime } from '../lib/clock.ts';
import { LOCALES } from '../i18n/locales.ts';

export interface AdminRouteOptions {
  admin: AdminService;
  /** The event types the log's `type` filter accepts (the audit service's: the admin service's code loads at its first call). */
  audit: Pick<AuditService, 'eventTypes'>;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;
/** The most roles one user may hold (the admin pages refuse more, too). */
export const MAX_ROLES = 50;
const MAX_PASSWORD_INPUT_LENGTH = 4096;

const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');

const adminUser = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string(),
    roles: z.array(z.string()),
    emailVerified: z.boolean(),
    disabled: z.boolean(),
    locale: z
      .enum(LOCALES)
      .nullable()
      .describe('The language of their mails: from their sign-up, a language they chose while signed in, or their first sign-in; null while none is known (mails then use the language of the request that causes them, else English)'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'AdminUser' });

const adminSession = z
  .object({
    id: z.string(),
    createdAt: z.iso.datetime(),
    lastSeenAt: z.iso.datetime(),
    expiresAt: z.iso.datetime(),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
  })
  .meta({ id: 'AdminSession' });

const auditEvent = z
  .object({
    id: z.string(),
    type: z.string().describe('e.g. signin.failure, user.roles_changed'),
    userId: z.string().nullable().describe('The account the event is about; null for a sign-in to an unknown address'),
    actorUserId: z.string().nullable().describe('Who did it, when it was not the user signing in: an admin, or the user ending a session'),
    email: z.string().nullable().describe('Sign-in failures only: the normalised address tried'),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    reason: z.string().nullable().describe('A stable UPPER_SNAKE code, e.g. INVALID_CREDENTIALS'),
    details: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'AuditEvent' });

const cursorField = keysetCursorField;

const limitField = z.coerce
  .number({ error: 'must be a number' })
  .int('must be an integer')
  .min(1, 'must be at least 1')
  .max(MAX_PAGE_SIZE, `must be at most ${MAX_PAGE_SIZE}`)
  .default(DEFAULT_PAGE_SIZE);

const roleList = z
  .array(z.string().max(64).refine(isValidRole, 'must be a role name: A-Z, 0-9 and _, starting with a letter'), { error: 'must be an array of role names' })
  .max(MAX_ROLES, `must list at most ${MAX_ROLES} roles`);

const createUserBody = z
  .object(
    {
      email: emailField,
      name: nameField,
      password: z
        .string({ error: required })
        .min(1, 'is required')
        .max(MAX_PASSWORD_INPUT_LENGTH, `must be at most ${MAX_PASSWORD_INPUT_LENGTH} characters`)
        .optional()
        .describe('Without one, the user signs in later by a provider or a password reset'),
      roles: roleList.optional(),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'AdminCreateUserRequest' });

const updateUserBody = z
  .object(
    {
      name: nameField.optional(),
      roles: roleList.optional().describe('The complete new set of roles'),
      disabled: z.boolean({ error: 'must be true or false' }).optional().describe('true ends all their sessions at once'),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'AdminUpdateUserRequest' });

const userParams = z.object({ id: z.string().min(1).max(64) });
const sessionParams = z.object({ id: z.string().min(1).max(64), sessionId: z.string().min(1).max(64) });

const guarded = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Not an ADMIN (FORBIDDEN); or a cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
  422: errorResponse.describe('Invalid fields (VALIDATION_ERROR), listed in `errors`'),
};
const notFound = { 404: errorResponse.describe('No such user (NOT_FOUND)') };
const common = { tags: ['admin'], security: [{ bearer: [] }] };
/** Reading the admin area. */
const forAdmins = { access: access.role(ADMIN_ROLE) };
/** Changing a user: an admin who has a second factor used it within REAUTH_WINDOW. */
const forAdminsRecentlyVerified = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
/** The acting admin, for the audit log. */
const actor = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);

function toAdminSession(session: SessionSummary) {
  return {
    id: session.id,
    createdAt: isoTime(session.createdAt),
    lastSeenAt: isoTime(session.lastSeenAt),
    expiresAt: isoTime(session.expiresAt),
    ip: session.ip,
    userAgent: session.userAgent,
  };
}

function toAuditEvent(event: AuditEvent) {
  return { ...event, createdAt: isoTime(event.createdAt) };
}

const nextCursor = (next: KeysetPosition | null) => (next === null ? null : encodeCursor(next));
const positionOf = (cursor: string | undefined) => (cursor === undefined ? {} : { before: decodeCursor(cursor)! });

export const adminRoutes: FastifyPluginAsyncZod<AdminRouteOptions> = async (app, { admin, audit }) => {
  app.get(
    '/api/admin/users',
    {
      config: forAdmins,
      schema: {
        ...common,
        summary: 'Find users: newest first, by the start of the e-mail or of a word of the name (`*text`: anywhere; `"text"`: exactly)',
        querystring: z.object({
          query: z
            .string()
            .max(200)
            .optional()
            .describe(
              'Case-insensitive. `ann` (or `ann*`): the e-mail, or a word of the name, starts with ann (a B-tree walk at any size); `*ann` (or `*ann*`): contains ann anywhere (trigram indexes on PostgreSQL: slower on large stores); `"ann@example.com"`: the e-mail or the whole name is the text. Text holding an `@` asks only the e-mail (unless it starts with `*`). Any other `*`, `%` or `_` is a character. Empty, `*` or `""`: everyone.',
            ),
          cursor: cursorField,
          limit: limitField,
        }),
        response: { 200: z.object({ users: z.array(adminUser), nextCursor: z.string().nullable() }).meta({ id: 'AdminUserList' }), ...guarded },
      },
    },
    async (request) => {
      const { query, cursor, limit } = request.query;
      const page = await admin.listUsers({ ...(query !== undefined && { query }), ...positionOf(cursor), limit });
      return { users: page.users.map(toUserJson), nextCursor: nextCursor(page.next) };
    },
  );

  app.get(
    '/api/admin/users/:id',
    {
      config: forAdmins,
      schema: {
        ...common,
        summary: 'A user and their active sessions',
        params: userParams,
        response: { 200: z.object({ user: adminUser, sessions: z.array(adminSession) }).meta({ id: 'AdminUserDetail' }), ...guarded, ...notFound },
      },
    },
    async (request) => {
      const found = await admin.getUser(request.params.id);
      if (found === null) throw new AppError('NOT_FOUND', { message: 'No such user.' });
      return { user: toUserJson(found.user), sessions: found.sessions.map(toAdminSession) };
    },
  );

  app.post(
    '/api/admin/users',
    {
      config: forAdminsRecentlyVerified,
      schema: {
        ...common,
        summary: 'Create a user (the address counts as verified)',
        body: createUserBody,
        response: {
          201: adminUser,
          ...bodyErrorResponses,
          ...guarded,
          409: errorResponse.describe('The address already has a user (EMAIL_TAKEN)'),
          422: errorResponse.describe('Invalid fields, or a password the policy refuses (VALIDATION_ERROR, with the reason in `errors`)'),
          429: errorResponse.describe('Too many refused passwords from this client (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const { email, name, password, roles } = request.body;
      const result = await admin.createUser(
        { email, name, ...(password !== undefined && { password }), ...(roles !== undefined && { roles }) },
        actor(request),
      );
      if (!result.ok) {
        if (result.reason === 'EMAIL_TAKEN') throw new AppError('EMAIL_TAKEN');
        if (result.reason === 'RATE_LIMITED') throw new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
        const error = result.reason === 'WEAK_PASSWORD' ? { field: 'password', message: result.rejection.message } : { field: 'roles', message: 'must be role names' };
        throw new AppError('VALIDATION_ERROR', { errors: [error] });
      }
      return reply.code(201).send(toUserJson(result.user));
    },
  );

  app.patch(
    '/api/admin/users/:id',
    {
      config: forAdminsRecentlyVerified,
      schema: {
        ...common,
        summary: 'Change a user’s name, roles or disabled state (disabling ends all their sessions)',
        description: 'Unknown fields are ignored. Role changes apply on the next request in the database strategy and at the next refresh in the jwt strategy.',
        params: userParams,
        body: updateUserBody,
        response: {
          200: adminUser,
          ...bodyErrorResponses,
          ...guarded,
          ...notFound,
          409: errorResponse.describe('You cannot disable yourself or remove your own ADMIN role (SELF_LOCKOUT)'),
        },
      },
    },
    async (request) => {
      const { name, roles, disabled } = request.body;
      const changes = { ...(name !== undefined && { name }), ...(roles !== undefined && { roles }), ...(disabled !== undefined && { disabled }) };
      const result = await admin.updateUser(request.params.id, changes, actor(request));
      if (!result.ok) {
        if (result.reason === 'NOT_FOUND') throw new AppError('NOT_FOUND', { message: 'No such user.' });
        if (result.reason === 'SELF_LOCKOUT') throw new AppError('SELF_LOCKOUT');
        // Demoted or disabled by another admin's change that came first: as if this request came after it.
        if (result.reason === 'FORBIDDEN') throw new AppError('FORBIDDEN');
        throw new AppError('VALIDATION_ERROR', { errors: [{ field: 'roles', message: 'must be role names' }] });
      }
      return toUserJson(result.user);
    },
  );

  app.delete(
    '/api/admin/users/:id/sessions',
    {
      config: forAdminsRecentlyVerified,
      schema: {
        ...common,
        summary: 'End all of a user’s sessions',
        params: userParams,
        response: { 200: z.object({ ok: z.literal(true), ended: z.number().int() }), ...guarded, ...notFound },
      },
    },
    async (request) => {
      const ended = await admin.endAllSessions(request.params.id, actor(request));
      if (ended === null) throw new AppError('NOT_FOUND', { message: 'No such user.' });
      return { ok: true as const, ended };
    },
  );

  app.delete(
    '/api/admin/users/:id/sessions/:sessionId',
    {
      config: forAdminsRecentlyVerified,
      schema: {
        ...common,
        summary: 'End one of a user’s sessions',
        params: sessionParams,
        response: { 200: z.object({ ok: z.literal(true) }), ...guarded, 404: errorResponse.describe('Not an active session of this user (NOT_FOUND)') },
      },
    },
    async (request) => {
      const { id, sessionId } = request.params;
      if (!(await admin.endSession(id, sessionId, actor(request)))) throw new AppError('NOT_FOUND', { message: 'No such active session.' });
      return { ok: true as const };
    },
  );

  app.get(
    '/api/admin/events',
    {
      config: forAdmins,
      schema: {
        ...common,
        summary: 'The audit log, newest first',
        querystring: z.object({
          userId: z.string().min(1).max(64).optional(),
          type: z.enum(audit.eventTypes as [AuditEventType, ...AuditEventType[]], { error: 'is not a known event type' }).optional(),
          cursor: cursorField,
          limit: limitField,
        }),
        response: { 200: z.object({ events: z.array(auditEvent), nextCursor: z.string().nullable() }).meta({ id: 'AuditEventList' }), ...guarded },
      },
    },
    async (request) => {
      const { userId, type, cursor, limit } = request.query;
      const page = await admin.listEvents({ ...(userId !== undefined && { userId }), ...(type !== undefined && { type }), ...positionOf(cursor), limit });
      return { events: page.events.map(toAuditEvent), nextCursor: nextCursor(page.next) };
    },
  );
};
