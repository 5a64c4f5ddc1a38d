/** What sign-ins count for in the metrics (metrics/counted-events.ts; docs/operations/metrics.md). */
import { codeLabel, factorLabel, type Count, type CountedEvent, type CounterDefinition } from '../metrics/counted-events.ts';

export const SIGNIN_COUNTERS: readonly CounterDefinition[] = [
  {
    metric: 'signins',
    name: 'signins_total',
    help: 'Sign-in outcomes, by first-factor method (password, oauth, passkey, unknown) and outcome (`success`, or the refusal code in lower case).',
    labels: { method: 'factor', outcome: 'code' },
  },
  { metric: 'sessionsCreated', name: 'sessions_created_total', help: 'Sessions started by a sign-in, by first-factor method.', labels: { method: 'factor' } },
];

/**
 * A sign-in counts under the first factor's registered kind, which the event records as `method`
 * (those of modules added later count under their own name). A failure recorded at a step (the
 * challenge of a second factor, say) is the step's module's to count, in `signins` too: there
 * `method` is the step's, and the first factor is not recorded.
 */
export const SIGNIN_COUNTED_EVENTS: readonly CountedEvent[] = [
  {
    from: ['signin.success', 'signin.failure'],
    count(event): Count[] {
      if (event.type === 'signin.success') {
        const method = factorLabel(event.details?.['method']);
        return [
          { metric: 'signins', labels: { method, outcome: 'success' }, by: 1 },
          { metric: 'sessionsCreated', labels: { method }, by: 1 },
        ];
      }
      if (event.details?.['step'] !== undefined) return [];
      return [{ metric: 'signins', labels: { method: factorLabel(event.details?.['method']), outcome: codeLabel(event.reason, 'other') }, by: 1 }];
    },
  },
];
