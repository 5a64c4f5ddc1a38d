/**
 * The metrics module's section: METRICS_TOKEN (`GET /metrics` on the main port, with that Bearer
 * token), METRICS_PORT and METRICS_HOST (a listener of its own that serves only `/metrics`, no
 * token). Neither set: no metrics endpoint, and nothing is measured.
 */
import { isIP } from 'node:net';
import { HOSTNAME } from '../config/env-reader.ts';
import type { ConfigSection } from '../config.ts';

declare module '../config.ts' {
  interface Config {
    readonly metrics: MetricsConfig;
  }
}

export interface MetricsConfig {
  /** METRICS_TOKEN: `GET /metrics` on the main port answers only with `Authorization: Bearer <token>`; null: it is not served there (404). Never log it. */
  readonly token: string | null;
  /** METRICS_PORT: a separate listener serving only `/metrics`, without a token; null: none. `0` picks a free port. */
  readonly port: number | null;
  /** METRICS_HOST: the address that listener binds (default 127.0.0.1). */
  readonly host: string;
  /** Either of the two is set: metrics are collected. */
  readonly isEnabled: boolean;
}

export const MIN_METRICS_TOKEN_LENGTH = 32;
const DEFAULT_METRICS_HOST = '127.0.0.1';

export const metricsConfigSection: ConfigSection = (read, _basis, problems) => {
  const token = read.raw('METRICS_TOKEN') ?? null;
  if (token !== null && (token.length < MIN_METRICS_TOKEN_LENGTH || /\s/.test(token))) {
    // Never the value: it is a secret.
    problems.push(`METRICS_TOKEN must be at least ${MIN_METRICS_TOKEN_LENGTH} characters without spaces (e.g. openssl rand -base64 32)`);
  }
  const port = read.string('METRICS_PORT') === undefined ? null : read.integer('METRICS_PORT', 0, { min: 0, max: 65_535 });
  const host = read.string('METRICS_HOST') ?? DEFAULT_METRICS_HOST;
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare) === 0 && !HOSTNAME.test(host)) problems.push(`METRICS_HOST must be an IP address or a host name (got "${host.slice(0, 100)}")`);
  return { metrics: { token, port, host: bare, isEnabled: token !== null || port !== null } };
};
