/**
 * Prometheus metrics (docs/operations/metrics.md): `GET /metrics` with METRICS_TOKEN as a Bearer
 * token, and/or a listener of its own on METRICS_PORT. With neither set the module brings nothing:
 * no service, no hook, no subscription, no job, not even prom-client loaded: an instance without
 * metrics pays nothing.
 *
 * Fed by: an `onResponse` hook (requests), a subscription to the domain events the modules count
 * (their `counters` and `countedEvents`: sign-ins, second factors, sessions; counted-events.ts), the rate limiters' refusal observer, storage's statement observer; and read at
 * scrape time from the hash queue, the strength-estimate queue, the signing keys and the outboxes.
 */
import { collectAuditEventTypes, collectCountedEvents, collectCounters, defineModule, type BackgroundJob } from '../module.ts';
import cluster from 'node:cluster';
import { serverLogDestination } from '../http/logging.ts';
import { strengthEstimator } from '../credentials/password-strength.ts';
import { metricsConfigSection } from './metrics.config.ts';
import type { MetricsService, MetricsSources } from './metrics.service.ts';
import { createMetricsListener, type MetricsListener } from './metrics.listener.ts';
import { countResponses, registerMetricsRoute } from './metrics.routes.ts';
import { eventCounting } from './counted-events.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    /** Null when neither METRICS_TOKEN nor METRICS_PORT is set. */
    metrics: MetricsService | null;
    /** The METRICS_PORT listener; null without METRICS_PORT. */
    metricsListener: MetricsListener | null;
  }
}

export const metricsModule = defineModule({
  name: 'metrics',
  config: metricsConfigSection,
  async provide({ config, storage, db, clock, logger, modules, services }) {
    // Checked whether metrics are on or not: a module's mistake shows on every instance.
    const refused = new Set<string>();
    const counting = eventCounting(collectCounters(modules), collectCountedEvents(modules), collectAuditEventTypes(modules), (count, why) => {
      if (refused.has(`${count.metric} ${why}`)) return;
      refused.add(`${count.metric} ${why}`);
      logger.warn({ metric: count.metric, why }, 'a count breaking the label rules was not counted');
    });
    if (!config.metrics.isEnabled) return { metrics: null, metricsListener: null };
    // prom-client (some 20 MB of resident memory) is loaded only by an instance that serves metrics.
    const [{ createMetricsService }, { clusterScrape }] = await Promise.all([import('./metrics.service.ts'), import('./cluster-metrics.ts')]);
    const has = (name: string) => modules.some((module) => module.name === name);
    const sources: MetricsSources = {
      ...(has('credentials') && { hashQueue: () => services.hasher.stats() }),
      logWriter: serverLogDestination(config),
      strengthQueue: () => strengthEstimator.stats?.(),
      ...(has('sessions') && { keys: services.keys }),
      outboxes: [
        ...(has('mail') ? [{ queue: 'mail' as const, table: 'mail_outbox' as const }] : []),
        ...(has('webhooks') ? [{ queue: 'webhooks' as const, table: 'webhook_deliveries' as const }] : []),
      ],
    };
    const metrics = createMetricsService({
      db,
      storage,
      rateLimiters: has('rate-limits') ? services.rateLimiters : undefined,
      clock,
      logger,
      sources,
      counters: collectCounters(modules),
      counting,
      // WORKERS > 1: a scrape answers for the whole cluster (the primary gathers every worker's).
      ...(cluster.isWorker && config.workers > 1 && { clusterScrape }),
    });
    const { port, host } = config.metrics;
    return { metrics, metricsListener: port === null ? null : createMetricsListener({ metrics, host, port, logger }) };
  },
  jobs({ metrics, metricsListener }) {
    if (metrics === null) return [];
    const feeds: BackgroundJob = { start: () => metrics.start(), stop: () => metrics.stop() };
    return metricsListener === null ? [feeds] : [feeds, metricsListener];
  },
  // Counted as they happen, in the event's transaction: memory only. A counter incremented for a
  // change whose transaction then rolls back stays incremented (a sign-in whose session write failed).
  subscriptions: ({ metrics }) =>
    metrics === null
      ? []
      : [
          {
            types: metrics.countedEventTypes,
            handle: async (event) => metrics.countEvent(event),
          },
        ],
  routes: [
    {
      // The root instance: its hook sees every route of both scopes.
      scope: 'api',
      register: async (app, { services, config }) => {
        const { metrics } = services;
        if (metrics === null) return;
        countResponses(app, metrics);
        if (config.metrics.token !== null) registerMetricsRoute(app, metrics, config.metrics.token);
      },
    },
  ],
});
