/** The public events (webhooks) made from this module's domain events; see audit/public-events.ts. */
import type { AuditEvent } from '../audit/audit.service.ts';
import { actorOf, detailOf, facts, publicCodes, publicCode, publicId, publicRoles, type PublicEventType } from '../audit/public-events.ts';

/** How the account came to be, from the creating module's details (the CLI and bootstrap say so in `via`). */
function creationMethod(event: AuditEvent): string | null {
  const via = detailOf(event, 'via');
  if (via === 'signup' || via === 'oauth' || via === 'cli' || via === 'bootstrap') return via;
  return event.actorUserId !== null ? 'admin' : null;
}

export const USERS_PUBLIC_EVENTS: readonly PublicEventType[] = [
  {
    type: 'user.created', description: 'users.webhookEvent.created',
    from: 'user.created',
    order: 10,
    payload: (event) => facts({ userId: publicId(event.userId), roles: publicRoles(detailOf(event, 'roles')), method: creationMethod(event), provider: publicCode(detailOf(event, 'provider')), actorUserId: actorOf(event) }),
  },
  { type: 'user.updated', description: 'users.webhookEvent.updated', from: 'user.updated', order: 20, payload: (event) => facts({ userId: publicId(event.userId), fields: publicCodes(detailOf(event, 'fields')), actorUserId: actorOf(event) }) },
  {
    type: 'user.updated',
    from: 'user.roles_changed',
    order: 20,
    payload: (event) => facts({ userId: publicId(event.userId), fields: ['roles'], roles: publicRoles(detailOf(event, 'after')), previousRoles: publicRoles(detailOf(event, 'before')), actorUserId: actorOf(event) }),
  },
  { type: 'user.deleted', description: 'users.webhookEvent.deleted', from: 'user.deleted', order: 30, payload: (event) => facts({ userId: publicId(event.userId), reason: publicCode(event.reason), actorUserId: actorOf(event) }) },
  { type: 'user.disabled', description: 'users.webhookEvent.disabled', from: 'user.disabled', order: 40, payload: (event) => facts({ userId: publicId(event.userId), actorUserId: actorOf(event) }) },
  { type: 'user.enabled', description: 'users.webhookEvent.enabled', from: 'user.enabled', order: 50, payload: (event) => facts({ userId: publicId(event.userId), actorUserId: actorOf(event) }) },
];
