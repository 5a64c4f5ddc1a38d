/** The public events (webhooks) made from this module's domain events; see audit/public-events.ts. */
import { actorOf, facts, publicId, type PublicEventType } from '../audit/public-events.ts';

// `mfa.enabled` and `mfa.disabled` are fed by the passkeys module's events too (each declaration gives the same order).
const MFA_ENABLED_ORDER = 100;
const MFA_DISABLED_ORDER = 110;

export const MFA_PUBLIC_EVENTS: readonly PublicEventType[] = [
  { type: 'mfa.enabled', description: 'mfa.webhookEvent.enabled', from: 'mfa.totp_enabled', order: MFA_ENABLED_ORDER, payload: (event) => facts({ userId: publicId(event.userId), method: 'totp' }) },
  { type: 'mfa.disabled', description: 'mfa.webhookEvent.disabled', from: 'mfa.totp_disabled', order: MFA_DISABLED_ORDER, payload: (event) => facts({ userId: publicId(event.userId), method: 'totp', actorUserId: actorOf(event) }) },
  { type: 'mfa.disabled', from: 'mfa.reset', order: MFA_DISABLED_ORDER, payload: (event) => facts({ userId: publicId(event.userId), method: 'all', actorUserId: actorOf(event) }) },
];
