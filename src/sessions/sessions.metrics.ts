/** What ended sessions count for in the metrics (metrics/counted-events.ts; docs/operations/metrics.md). */
import { codeLabel, type CountedEvent, type CounterDefinition } from '../metrics/counted-events.ts';

export const SESSIONS_COUNTERS: readonly CounterDefinition[] = [
  {
    metric: 'sessionsEnded',
    name: 'sessions_ended_total',
    help: 'Sessions ended before their time, by reason (signout, token_reused, a reason code, ended, all_ended); expiry is not counted.',
    labels: { reason: 'code' },
  },
];

const ended = (reason: string, by = 1) => [{ metric: 'sessionsEnded', labels: { reason }, by }];

/** Sessions ended, by reason; all of a user's by their number. */
export const SESSIONS_COUNTED_EVENTS: readonly CountedEvent[] = [
  { from: ['signout'], count: () => ended('signout') },
  { from: ['session.ended'], count: (event) => ended(codeLabel(event.reason, 'ended')) },
  { from: ['refresh.reuse_detected'], count: () => ended('token_reused') },
  {
    from: ['user.sessions_ended'],
    count(event) {
      const count = event.details?.['count'];
      return ended(codeLabel(event.reason, 'all_ended'), typeof count === 'number' && Number.isSafeInteger(count) && count > 0 ? count : 1);
    },
  },
];
