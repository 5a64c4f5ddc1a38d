/** The public events (webhooks) made from this module's domain events; see audit/public-events.ts. */
import { actorOf, detailOf, facts, publicId, type PublicEventType } from '../audit/public-events.ts';

// A passkey is a second factor: its events are `mfa.enabled` and `mfa.disabled` (in the mfa module's order too).
export const PASSKEYS_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'mfa.enabled', from: 'passkey.added', order: 100, payload: (event) => facts({ userId: publicId(event.userId), method: 'passkey', passkeyId: publicId(detailOf(event, 'passkeyId')) }) },
  {
    type: 'mfa.disabled',
    from: 'passkey.removed',
    order: 110,
    payload: (event) => facts({ userId: publicId(event.userId), method: 'passkey', passkeyId: publicId(detailOf(event, 'passkeyId')), actorUserId: actorOf(event) }),
  },
];
