/** The public event (webhook) made from this module's domain events; see audit/public-events.ts. */
import { detailOf, facts, publicCode, publicCodes, publicId, type PublicEventType } from '../audit/public-events.ts';

// Not published: the sign-in's `method`, `step` and `stepMethod` (how the factors were proved);
// `amr` already says it in the standard's words.
export const SIGNIN_PUBLIC_EVENTS: readonly PublicEventType[] = [
  {
    type: 'session.created', description: 'signin.webhookEvent.sessionCreated',
    from: 'signin.success',
    order: 60,
    payload: (event) => facts({ userId: publicId(event.userId), sessionId: publicId(detailOf(event, 'sessionId')), amr: publicCodes(detailOf(event, 'amr')), provider: publicCode(detailOf(event, 'provider')) }),
  },
];
