/** The public event (webhook) made from this module's domain events; see audit/public-events.ts. */
import { detailOf, facts, publicCount, publicId, type PublicEventType } from '../audit/public-events.ts';

export const PASSWORD_RESET_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'password.reset', description: 'password-reset.webhookEvent.passwordReset', from: 'password.reset', order: 90, payload: (event) => facts({ userId: publicId(event.userId), sessionsEnded: publicCount(detailOf(event, 'sessionsEnded')) }) },
];
