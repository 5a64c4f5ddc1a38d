/**
 * The metrics: one prom-client Registry of this process's own (never the library's global one),
 * the counters that requests, domain events, rate limits and storage feed as things happen, and the
 * gauges read at scrape time (hash and estimate queues, outbox backlogs, signing keys).
 *
 * Label values come from fixed vocabularies only: HTTP methods, route patterns (never the raw URL),
 * status codes, limiter names, reason codes, method names. No user id, address, IP or token ever
 * becomes a label.
 *
 * Nothing here does I/O while a request runs: the feeds increment memory; the outbox reads happen
 * when Prometheus scrapes, bounded in rows and time.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AuditEvent, AuditEventType } from '../audit/audit.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { HashQueueStats } from '../credentials/password-hasher.ts';
import type { Db, QueryObserver, Storage } from '../storage/database.ts';
import type { RateLimiters } from '../http/rate-limit.ts';
import { UnavailableError } from '../errors.ts';
import type { Count, CounterDefinition } from './counted-events.ts';
import { readOutboxBacklog, type OutboxBacklog, type OutboxTable } from './metrics.store.ts';

export const METRIC_PREFIX = 'gatehouse_';

/** Pending rows read per outbox at each scrape, at most (see `readOutboxBacklog`). */
export const OUTBOX_COUNT_CAP = 10_000;
/** A scrape waits this long for an outbox's backlog; past it that outbox's series are left out. */
const OUTBOX_READ_TIMEOUT_MS = 2_000;

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const QUERY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Kysely's node kinds, as the `operation` label. */
const OPERATIONS: Record<string, string> = {
  SelectQueryNode: 'select',
  InsertQueryNode: 'insert',
  UpdateQueryNode: 'update',
  DeleteQueryNode: 'delete',
  RawNode: 'raw',
};

/** What the gauges read at scrape time; each optional (a module list without one leaves its series out). */
export interface MetricsSources {
  readonly hashQueue?: () => HashQueueStats;
  /** The server's log writer (lib/log-writer.ts): lines dropped, bytes waiting. */
  readonly logWriter?: { readonly dropped: number; readonly buffered: number };
  readonly strengthQueue?: () => { readonly running: number; readonly queued: number; readonly maxQueued: number } | undefined;
  readonly keys?: { publicJwks(): readonly unknown[]; signingKids(): readonly string[]; currentCreatedAt(): number };
  /** The outboxes to measure (those whose module is in the list). */
  readonly outboxes: ReadonlyArray<{ readonly queue: 'mail' | 'webhooks'; readonly table: OutboxTable }>;
}

export interface MetricsService {
  /** `Content-Type` of the exposition. */
  readonly contentType: string;
  /** The exposition text (Prometheus text format 0.0.4). */
  scrape(): Promise<string>;
  /** One answered request: `route` is the route's pattern, or null when no route matched. */
  observeHttp(method: string, route: string | undefined, status: number, seconds: number): void;
  /** The domain events the modules count (their `countedEvents`). */
  readonly countedEventTypes: readonly AuditEventType[];
  /** A domain event, inside its transaction: increments counters only, never throws. */
  countEvent(event: AuditEvent): void;
  /**
   * A count a module makes itself, of what happens too often to be a domain event (a use of an API
   * key, per request), in one of its declared counters and within the same label rules; memory
   * only, never throws.
   */
  count(count: Count): void;
  /** Requests refused by a rate limit since this process started serving, by limiter (the admin overview). */
  refusalsByLimiter(): Promise<Array<{ limiter: string; count: number }>>;
  /** Starts the process metrics and the feeds (rate-limit refusals, storage statements); the app does, when it serves. */
  start(): void;
  /** Stops the feeds. */
  stop(): void;
}

export function createMetricsService(deps: {
  db: Db;
  storage: Storage;
  rateLimiters: RateLimiters | undefined;
  clock: Clock;
  logger: Logger;
  sources: MetricsSources;
  /** The counters the modules declare, in list order, and what an event counts for (counted-events.ts's `eventCounting`: within the label rules). */
  counters: readonly CounterDefinition[];
  counting: { readonly types: readonly AuditEventType[]; countsOf(event: AuditEvent): readonly Count[]; admits(count: Count): boolean };
  /** With WORKERS > 1, in a worker: how a scrape gets the cluster's metrics rather than this process's. */
  clusterScrape?: (registry: Registry) => () => Promise<string>;
}): MetricsService {
  const { db, storage, rateLimiters, clock, logger, sources } = deps;
  const registry = new Registry();
  const name = (suffix: string) => `${METRIC_PREFIX}${suffix}`;

  const httpRequests = new Counter({
    name: name('http_requests_total'),
    help: 'HTTP requests answered, by method, route pattern (`unmatched` when no route matched) and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: name('http_request_duration_seconds'),
    help: 'Time from the request to its answer, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });

  // The modules' counters (their `counters`): names, help texts and labels as they declare them.
  const counters = new Map(
    deps.counters.map((counter) => [counter.metric, new Counter({ name: name(counter.name), help: counter.help, labelNames: Object.keys(counter.labels), registers: [registry] })]),
  );

  const refusals = new Counter({
    name: name('rate_limit_refusals_total'),
    help: 'Requests refused by a rate limit, by limiter.',
    labelNames: ['limiter'] as const,
    registers: [registry],
  });

  const queryDuration = new Histogram({
    name: name('storage_query_duration_seconds'),
    help: 'Database statements, by operation (select, insert, update, delete, raw, other), failed ones included.',
    labelNames: ['operation'] as const,
    buckets: QUERY_BUCKETS,
    registers: [registry],
  });
  const queryErrors = new Counter({
    name: name('storage_query_errors_total'),
    help: 'Database statements that failed, by operation and error (`unavailable`: not answering in time or hung; `failed`: any other, constraint violations the code expects included).',
    labelNames: ['operation', 'error'] as const,
    registers: [registry],
  });
  // One child per operation, made once: a statement costs one observe.
  const queryTimers = new Map(Object.values(OPERATIONS).concat('other').map((operation) => [operation, queryDuration.labels(operation)]));
  const observeQuery: QueryObserver = (kind, durationMs, error) => {
    const operation = OPERATIONS[kind] ?? 'other';
    queryTimers.get(operation)!.observe(durationMs / 1000);
    if (error !== undefined) queryErrors.inc({ operation, error: error instanceof UnavailableError ? 'unavailable' : 'failed' });
  };

  if (sources.hashQueue !== undefined) registerHashQueue(registry, sources.hashQueue);
  if (sources.logWriter !== undefined) {
    const writer = sources.logWriter;
    counterOf(registry, name('log_lines_dropped_total'), 'Log lines dropped because the reader of standard output was slow or gone (the server never waits for it).', () => writer.dropped);
    gaugeOf(registry, name('log_buffered_bytes'), 'Log bytes waiting for the reader of standard output.', () => writer.buffered);
  }
  if (sources.strengthQueue !== undefined) registerStrengthQueue(registry, sources.strengthQueue);
  if (sources.keys !== undefined) registerKeys(registry, sources.keys, clock);
  if (sources.outboxes.length > 0) registerOutboxes(registry, sources.outboxes, (table) => readOutboxBacklog(db, table, OUTBOX_COUNT_CAP), clock, logger);

  let isStarted = false;
  let hasDefaultMetrics = false;

  return {
    contentType: registry.contentType,
    // In a cluster worker, the whole cluster's (the primary gathers every worker's): see cluster-metrics.ts.
    scrape: deps.clusterScrape?.(registry) ?? (() => registry.metrics()),
    countedEventTypes: deps.counting.types,

    observeHttp(method, route, status, seconds) {
      const methodLabel = HTTP_METHODS.has(method) ? method : 'OTHER';
      const routeLabel = route ?? 'unmatched';
      try {
        httpRequests.inc({ method: methodLabel, route: routeLabel, status: String(status) });
        httpDuration.observe({ method: methodLabel, route: routeLabel }, seconds);
      } catch {
        // Metrics never cost a request anything but time.
      }
    },

    async refusalsByLimiter() {
      const { values } = await refusals.get();
      return values.map((value) => ({ limiter: String(value.labels.limiter), count: value.value })).filter((row) => row.count > 0);
    },

    countEvent(event) {
      try {
        for (const count of deps.counting.countsOf(event)) counters.get(count.metric)?.inc(count.labels, count.by);
      } catch {
        // Metrics never cost the change its transaction.
      }
    },

    count(count) {
      try {
        if (deps.counting.admits(count)) counters.get(count.metric)?.inc(count.labels, count.by);
      } catch {
        // Metrics never cost the request its answer.
      }
    },

    start() {
      if (isStarted) return;
      isStarted = true;
      // Once per registry: the event-loop and GC monitors they start cannot be taken back.
      if (!hasDefaultMetrics) {
        collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
        hasDefaultMetrics = true;
      }
      rateLimiters?.observeRefusals?.((limiter) => refusals.inc({ limiter }));
      storage.observeQueries?.(observeQuery);
    },

    stop() {
      if (!isStarted) return;
      isStarted = false;
      rateLimiters?.observeRefusals?.(null);
      storage.observeQueries?.(null);
    },
  };
}

/** Gauges read from `read()` when scraped. */
function gaugeOf(registry: Registry, metricName: string, help: string, read: () => number | undefined, aggregator: 'sum' | 'max' = 'sum'): void {
  new Gauge({
    name: metricName,
    help,
    registers: [registry],
    aggregator,
    collect() {
      const value = read();
      if (value !== undefined) this.set(value);
    },
  });
}

/** A counter whose total lives elsewhere (read at scrape time), as a Prometheus counter. */
function counterOf(registry: Registry, metricName: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name: metricName,
    help,
    registers: [registry],
    collect() {
      const total = read();
      if (total > seen) this.inc(total - seen);
      seen = Math.max(seen, total);
    },
  });
}

function registerHashQueue(registry: Registry, stats: () => HashQueueStats): void {
  gaugeOf(registry, `${METRIC_PREFIX}password_hash_running`, 'Password hashes computing now.', () => stats().running);
  gaugeOf(registry, `${METRIC_PREFIX}password_hash_concurrency`, 'Password hashes that may compute at once (HASH_CONCURRENCY).', () => stats().maxConcurrent);
  gaugeOf(registry, `${METRIC_PREFIX}password_hash_queued`, 'Password hashes waiting for a slot now (the hash queue depth).', () => stats().queued);
  gaugeOf(registry, `${METRIC_PREFIX}password_hash_queue_capacity`, 'Password hashes that may wait (HASH_QUEUE_MAX).', () => stats().maxQueued);
  counterOf(registry, `${METRIC_PREFIX}password_hashes_total`, 'Password hashes (and dummy verifications) that got a slot.', () => stats().started);
  counterOf(registry, `${METRIC_PREFIX}password_hash_wait_seconds_total`, 'Seconds password hashes waited for a slot, in all; divided by the rate of password_hashes_total, the mean wait.', () => stats().waitSecondsTotal);
  counterOf(registry, `${METRIC_PREFIX}password_hash_refusals_total`, 'Password hashes refused (queue full, or waited HASH_QUEUE_TIMEOUT_MS): answered 503.', () => stats().refused);
}

function registerStrengthQueue(registry: Registry, stats: () => { readonly running: number; readonly queued: number; readonly maxQueued: number } | undefined): void {
  gaugeOf(registry, `${METRIC_PREFIX}password_strength_running`, 'Password strength estimates computing now (0 or 1: one worker).', () => stats()?.running);
  gaugeOf(registry, `${METRIC_PREFIX}password_strength_queued`, 'Password strength estimates waiting for the worker now.', () => stats()?.queued);
  gaugeOf(registry, `${METRIC_PREFIX}password_strength_queue_capacity`, 'Password strength estimates that may wait.', () => stats()?.maxQueued);
}

function registerKeys(registry: Registry, keys: NonNullable<MetricsSources['keys']>, clock: Clock): void {
  // Every worker holds the same keys: across a cluster, one of them, not the sum.
  gaugeOf(registry, `${METRIC_PREFIX}signing_keys_published`, 'Public keys published at the JWKS (signing, ahead of activation, and retiring).', () => keys.publicJwks().length, 'max');
  gaugeOf(registry, `${METRIC_PREFIX}signing_keys_signing`, 'Keys that sign now (one per algorithm).', () => keys.signingKids().length, 'max');
  gaugeOf(
    registry,
    `${METRIC_PREFIX}signing_key_age_seconds`,
    'Seconds since the key that signs access tokens now was made (since the last rotation).',
    () => Math.max(0, (clock() - keys.currentCreatedAt()) / 1000),
    'max',
  );
}

function registerOutboxes(
  registry: Registry,
  outboxes: MetricsSources['outboxes'],
  read: (table: OutboxTable) => Promise<OutboxBacklog>,
  clock: Clock,
  logger: Logger,
): void {
  // The registry collects every metric at once: both gauges wait for one read of each outbox per scrape.
  let reading: Promise<Map<string, OutboxBacklog | null>> | null = null;
  const readAll = () =>
    (reading ??= Promise.all(
      outboxes.map(async ({ queue, table }) => {
        try {
          return [queue, await withTimeout(read(table), OUTBOX_READ_TIMEOUT_MS)] as const;
        } catch (error) {
          logger.warn({ err: error, queue }, 'metrics: outbox backlog not read');
          return [queue, null] as const;
        }
      }),
    )
      .then((entries) => new Map<string, OutboxBacklog | null>(entries))
      .finally(() => {
        // Settled: the next scrape reads again (a scrape that started meanwhile shares this read).
        setImmediate(() => {
          reading = null;
        });
      }));
  const outboxGauge = (suffix: string, help: string, value: (backlog: OutboxBacklog) => number) =>
    new Gauge({
      name: `${METRIC_PREFIX}${suffix}`,
      help,
      labelNames: ['queue'] as const,
      registers: [registry],
      // Every worker reads the same shared table: across a cluster, one of them, not the sum.
      aggregator: 'max',
      async collect() {
        const backlogs = await readAll();
        for (const { queue } of outboxes) {
          const backlog = backlogs.get(queue);
          // Unknown now (the read failed or took too long): no value rather than an old one.
          if (backlog === null || backlog === undefined) this.remove({ queue });
          else this.set({ queue }, value(backlog));
        }
      },
    });
  outboxGauge('outbox_pending', `Messages waiting in an outbox (mail, webhooks), counted up to ${OUTBOX_COUNT_CAP}.`, (backlog) => backlog.pending);
  outboxGauge('outbox_oldest_pending_age_seconds', 'Age of the oldest message waiting in an outbox (0 when none waits).', (backlog) =>
    backlog.oldestCreatedAt === null ? 0 : Math.max(0, (clock() - backlog.oldestCreatedAt) / 1000),
  );
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
