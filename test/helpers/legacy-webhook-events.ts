/**
 * FROZEN COPY of the webhook events table before issue 31 moved it into the modules (main's
 * src/webhooks/events.ts, unchanged below this comment but for this header): which audit type
 * feeds which webhook type, in which order the types are offered, and each payload's allow-list.
 * src/webhooks/events.test.ts compares what the modules now declare (`publicEvents`) with it.
 * Do not update it to follow new behaviour and do not import it from src/.
 */
import type { AuditEvent } from '../../src/audit/audit.service.ts';

export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.disabled',
  'user.enabled',
  'session.created',
  'session.revoked',
  'password.changed',
  'password.reset',
  'mfa.enabled',
  'mfa.disabled',
  'email.verified',
  'organization.created',
  'organization.deleted',
  'organization.member.added',
  'organization.member.removed',
  'organization.member.updated',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export type WebhookData = Record<string, string | number | boolean | string[] | null>;

export interface EventSource {
  readonly type: WebhookEventType;
  readonly data: (event: AuditEvent) => WebhookData;
}

/** Identifiers and codes are short printable tokens; anything else is left out. */
const TOKEN = /^[A-Za-z0-9_.:-]{1,128}$/;
const ROLE = /^[A-Z][A-Z0-9_]{0,63}$/;

function id(value: unknown): string | null {
  return typeof value === 'string' && TOKEN.test(value) ? value : null;
}

function code(value: unknown): string | null {
  return typeof value === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : null;
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

function roles(value: unknown): string[] | null {
  return Array.isArray(value) ? value.filter((role): role is string => typeof role === 'string' && ROLE.test(role)).slice(0, 100) : null;
}

function codes(value: unknown): string[] | null {
  return Array.isArray(value) ? value.map(code).filter((item): item is string => item !== null).slice(0, 20) : null;
}

const detail = (event: AuditEvent, key: string): unknown => event.details?.[key];

/** Leaves out what is null, so a payload has only the facts it carries. */
function facts(entries: Record<string, string | number | boolean | string[] | null | undefined>): WebhookData {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== null && value !== undefined)) as WebhookData;
}

/** Who did it, when not the user themself (an administrator, the user ending a session elsewhere). */
const actor = (event: AuditEvent) => id(event.actorUserId);

/** How the account came to be, from the creating module's details (the CLI and bootstrap say so in `via`). */
function creationMethod(event: AuditEvent): string | null {
  const via = detail(event, 'via');
  if (via === 'signup' || via === 'oauth' || via === 'cli' || via === 'bootstrap') return via;
  return event.actorUserId !== null ? 'admin' : null;
}

function organizationFacts(event: AuditEvent): WebhookData {
  return facts({
    organizationId: id(detail(event, 'organizationId')),
    slug: code(detail(event, 'slug')),
    userId: id(detail(event, 'memberUserId')) ?? id(detail(event, 'memberId')) ?? id(event.userId),
    role: code(detail(event, 'role')),
    previousRole: code(detail(event, 'previousRole')),
    reason: code(event.reason),
    actorUserId: actor(event),
  });
}

/** Audit event type -> the webhook event it becomes. */
export const EVENT_SOURCES: Readonly<Record<string, EventSource>> = {
  'user.created': {
    type: 'user.created',
    data: (event) => facts({ userId: id(event.userId), roles: roles(detail(event, 'roles')), method: creationMethod(event), provider: code(detail(event, 'provider')), actorUserId: actor(event) }),
  },
  'user.updated': {
    type: 'user.updated',
    data: (event) => facts({ userId: id(event.userId), fields: codes(detail(event, 'fields')), actorUserId: actor(event) }),
  },
  'user.roles_changed': {
    type: 'user.updated',
    data: (event) => facts({ userId: id(event.userId), fields: ['roles'], roles: roles(detail(event, 'after')), previousRoles: roles(detail(event, 'before')), actorUserId: actor(event) }),
  },
  'user.deleted': { type: 'user.deleted', data: (event) => facts({ userId: id(event.userId), reason: code(event.reason), actorUserId: actor(event) }) },
  'user.disabled': { type: 'user.disabled', data: (event) => facts({ userId: id(event.userId), actorUserId: actor(event) }) },
  'user.enabled': { type: 'user.enabled', data: (event) => facts({ userId: id(event.userId), actorUserId: actor(event) }) },
  'signin.success': {
    type: 'session.created',
    data: (event) => facts({ userId: id(event.userId), sessionId: id(detail(event, 'sessionId')), amr: codes(detail(event, 'amr')), provider: code(detail(event, 'provider')) }),
  },
  signout: { type: 'session.revoked', data: (event) => facts({ userId: id(event.userId), sessionId: id(detail(event, 'sessionId')), reason: 'SIGNED_OUT' }) },
  'session.ended': {
    type: 'session.revoked',
    data: (event) => facts({ userId: id(event.userId), sessionId: id(detail(event, 'sessionId')), reason: code(event.reason) ?? 'ENDED', actorUserId: actor(event) }),
  },
  'user.sessions_ended': {
    type: 'session.revoked',
    data: (event) =>
      facts({
        userId: id(event.userId),
        allSessions: true,
        sessionCount: count(detail(event, 'count')),
        keptSessionId: id(detail(event, 'keptSessionId')),
        reason: code(event.reason) ?? 'ENDED',
        actorUserId: actor(event),
      }),
  },
  'refresh.reuse_detected': { type: 'session.revoked', data: (event) => facts({ userId: id(event.userId), sessionId: id(detail(event, 'sessionId')), reason: 'TOKEN_REUSED' }) },
  'password.changed': { type: 'password.changed', data: (event) => facts({ userId: id(event.userId), sessionsEnded: count(detail(event, 'sessionsEnded')) }) },
  'password.reset': { type: 'password.reset', data: (event) => facts({ userId: id(event.userId), sessionsEnded: count(detail(event, 'sessionsEnded')) }) },
  'mfa.totp_enabled': { type: 'mfa.enabled', data: (event) => facts({ userId: id(event.userId), method: 'totp' }) },
  'passkey.added': { type: 'mfa.enabled', data: (event) => facts({ userId: id(event.userId), method: 'passkey', passkeyId: id(detail(event, 'passkeyId')) }) },
  'mfa.totp_disabled': { type: 'mfa.disabled', data: (event) => facts({ userId: id(event.userId), method: 'totp', actorUserId: actor(event) }) },
  'mfa.reset': { type: 'mfa.disabled', data: (event) => facts({ userId: id(event.userId), method: 'all', actorUserId: actor(event) }) },
  'passkey.removed': { type: 'mfa.disabled', data: (event) => facts({ userId: id(event.userId), method: 'passkey', passkeyId: id(detail(event, 'passkeyId')), actorUserId: actor(event) }) },
  'email.verified': { type: 'email.verified', data: (event) => facts({ userId: id(event.userId) }) },
  'organization.created': { type: 'organization.created', data: organizationFacts },
  'organization.deleted': { type: 'organization.deleted', data: organizationFacts },
  'organization.member.added': { type: 'organization.member.added', data: organizationFacts },
  'organization.member.removed': { type: 'organization.member.removed', data: organizationFacts },
  'organization.member.updated': { type: 'organization.member.updated', data: organizationFacts },
};

/**
 * The part of the table whose audit types some module declares: the audit types to subscribe to,
 * and the webhook types an endpoint may ask for (in WEBHOOK_EVENT_TYPES order).
 */
export function sourcesFor(declaredAuditTypes: readonly string[]): { auditTypes: string[]; webhookTypes: WebhookEventType[] } {
  const declared = new Set(declaredAuditTypes);
  const auditTypes = Object.keys(EVENT_SOURCES).filter((type) => declared.has(type));
  const produced = new Set(auditTypes.map((type) => EVENT_SOURCES[type]!.type));
  return { auditTypes, webhookTypes: WEBHOOK_EVENT_TYPES.filter((type) => produced.has(type)) };
}

/** The JSON body of a webhook (exactly the bytes that are signed and sent). */
export function webhookBody(type: WebhookEventType | string, epochMs: number, data: WebhookData): string {
  return JSON.stringify({ type, timestamp: new Date(epochMs).toISOString(), data });
}
