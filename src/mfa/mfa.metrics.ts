/** What second factors count for in the metrics (metrics/counted-events.ts; docs/operations/metrics.md). */
import type { AuditEventType } from '../audit/audit.service.ts';
import { codeLabel, factorLabel, type Count, type CountedEvent, type CounterDefinition } from '../metrics/counted-events.ts';
import { SECOND_FACTOR_STEP } from './second-factor.ts';

export const MFA_COUNTERS: readonly CounterDefinition[] = [
  {
    metric: 'secondFactor',
    name: 'second_factor_total',
    help: 'Second-factor outcomes at sign-in, by method (otp, passkey, unknown) and outcome (`success`, or the refusal code in lower case).',
    labels: { method: 'factor', outcome: 'code' },
  },
  // The passkeys module counts its passkeys here too.
  { metric: 'mfaChanges', name: 'mfa_changes_total', help: 'Second factors added, removed or renewed, by domain event type.', labels: { event: 'event' } },
];

/**
 * A second factor's label: `otp` for the methods that prove a one-time password (RFC 8176: an
 * authenticator app, a recovery code), else the method as registered (`passkey`).
 */
const SECOND_FACTOR_LABELS: ReadonlyMap<string, string> = new Map([
  ['totp', 'otp'],
  ['recovery_code', 'otp'],
]);

function secondFactorLabel(method: unknown): string {
  const name = factorLabel(method);
  return SECOND_FACTOR_LABELS.get(name) ?? name;
}

/** How this module's events count: its sign-in step's outcomes, and `changes` (its own events) as changes to second factors. */
export function mfaCountedEvents(changes: readonly AuditEventType[]): readonly CountedEvent[] {
  return [
    {
      // The outcome of this module's sign-in step: met (the sign-in resumed after its challenge,
      // met by `stepMethod`; a first factor that is two in one, a passkey alone, has none), or
      // failed, which is a refused sign-in too (there `method` is the second factor's; the first
      // factor is not recorded: `unknown`).
      from: ['signin.success', 'signin.failure'],
      count(event): Count[] {
        if (event.details?.['step'] !== SECOND_FACTOR_STEP) return [];
        if (event.type === 'signin.success') return [{ metric: 'secondFactor', labels: { method: secondFactorLabel(event.details['stepMethod']), outcome: 'success' }, by: 1 }];
        const outcome = codeLabel(event.reason, 'other');
        return [
          { metric: 'secondFactor', labels: { method: secondFactorLabel(event.details['method']), outcome }, by: 1 },
          { metric: 'signins', labels: { method: 'unknown', outcome }, by: 1 },
        ];
      },
    },
    { from: changes, count: (event) => [{ metric: 'mfaChanges', labels: { event: event.type }, by: 1 }] },
  ];
}
