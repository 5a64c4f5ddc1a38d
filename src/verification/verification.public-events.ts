/** The public event (webhook) made from this module's domain events; see audit/public-events.ts. */
import { facts, publicId, type PublicEventType } from '../audit/public-events.ts';

export const VERIFICATION_PUBLIC_EVENTS: readonly PublicEventType[] = [{ type: 'email.verified', description: 'verification.webhookEvent.emailVerified', from: 'email.verified', order: 120, payload: (event) => facts({ userId: publicId(event.userId) }) }];
