/** The public events (webhooks) made from this module's domain events; see audit/public-events.ts. */
import { actorOf, detailOf, facts, publicCode, publicCount, publicId, type PublicEventType } from '../audit/public-events.ts';

export const SESSIONS_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'session.revoked', description: 'sessions.webhookEvent.revoked', from: 'signout', order: 70, payload: (event) => facts({ userId: publicId(event.userId), sessionId: publicId(detailOf(event, 'sessionId')), reason: 'SIGNED_OUT' }) },
  {
    type: 'session.revoked',
    from: 'session.ended',
    order: 70,
    payload: (event) => facts({ userId: publicId(event.userId), sessionId: publicId(detailOf(event, 'sessionId')), reason: publicCode(event.reason) ?? 'ENDED', actorUserId: actorOf(event) }),
  },
  {
    type: 'session.revoked',
    from: 'user.sessions_ended',
    order: 70,
    payload: (event) =>
      facts({
        userId: publicId(event.userId),
        allSessions: true,
        sessionCount: publicCount(detailOf(event, 'count')),
        keptSessionId: publicId(detailOf(event, 'keptSessionId')),
        reason: publicCode(event.reason) ?? 'ENDED',
        actorUserId: actorOf(event),
      }),
  },
  {
    type: 'session.revoked',
    from: 'refresh.reuse_detected',
    order: 70,
    payload: (event) => facts({ userId: publicId(event.userId), sessionId: publicId(detailOf(event, 'sessionId')), reason: 'TOKEN_REUSED' }),
  },
];
