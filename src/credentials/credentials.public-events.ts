/** The public event (webhook) made from this module's domain events; see audit/public-events.ts. */
import { detailOf, facts, publicCount, publicId, type PublicEventType } from '../audit/public-events.ts';

export const CREDENTIALS_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'password.changed', description: 'credentials.webhookEvent.passwordChanged', from: 'password.changed', order: 80, payload: (event) => facts({ userId: publicId(event.userId), sessionsEnded: publicCount(detailOf(event, 'sessionsEnded')) }) },
];
