/** What passkey changes count for in the metrics: the mfa module's `mfa_changes_total` (metrics/counted-events.ts). */
import type { CountedEvent } from '../metrics/counted-events.ts';

export const PASSKEYS_COUNTED_EVENTS: readonly CountedEvent[] = [{ from: ['passkey.added', 'passkey.removed'], count: (event) => [{ metric: 'mfaChanges', labels: { event: event.type }, by: 1 }] }];
