/** The webhooks module's part of the configuration. */
import type { ConfigSection } from '../config.ts';

export interface WebhooksConfig {
  /**
   * Receivers may be on loopback, private (RFC 1918, fc00::/7), link-local, CGNAT and other
   * non-public addresses (WEBHOOK_ALLOW_PRIVATE_TARGETS, default false). The cloud metadata
   * addresses (169.254.169.254, fd00:ec2::254) stay refused even then.
   */
  readonly allowPrivateTargets: boolean;
  /** Plain http receivers: only when NODE_ENV is development or test. */
  readonly allowHttp: boolean;
  /** An endpoint whose every attempt has failed for this long is disabled (WEBHOOK_DISABLE_AFTER, default 5 days). */
  readonly disableAfterSeconds: number;
  /** Delivered and failed deliveries older than this are deleted (WEBHOOK_RETENTION, default 30 days). */
  readonly retentionSeconds: number;
  /** How often the worker looks for due deliveries (it is also woken by each new one). */
  readonly pollIntervalMs: number;
  /** One attempt (connect, TLS, request, the answer's head) may take this long (WEBHOOK_TIMEOUT_MS, default 10 s). */
  readonly timeoutMs: number;
  /**
   * A failing endpoint's backlog: with this many deliveries pending for it, a new event is recorded
   * as a failed delivery (`BACKLOG_FULL`, redeliverable) instead of queued
   * (WEBHOOK_MAX_PENDING_PER_ENDPOINT, default 10 000).
   */
  readonly maxPendingPerEndpoint: number;
}

declare module '../config.ts' {
  interface Config {
    readonly webhooks: WebhooksConfig;
  }
}

export const webhooksConfigSection: ConfigSection = (read, { env }) => ({
  webhooks: {
    allowPrivateTargets: read.boolean('WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    allowHttp: env === 'development' || env === 'test',
    disableAfterSeconds: read.duration('WEBHOOK_DISABLE_AFTER', 5 * 86_400),
    retentionSeconds: read.duration('WEBHOOK_RETENTION', 30 * 86_400),
    pollIntervalMs: read.integer('WEBHOOK_POLL_INTERVAL_MS', 5_000, { min: 100, max: 600_000 }),
    timeoutMs: read.integer('WEBHOOK_TIMEOUT_MS', 10_000, { min: 1_000, max: 60_000 }),
    maxPendingPerEndpoint: read.integer('WEBHOOK_MAX_PENDING_PER_ENDPOINT', 10_000, { min: 10, max: 1_000_000 }),
  },
});
