/** The SCIM module's part of the configuration. */
import type { ConfigSection, RateLimit } from '../config.ts';

export interface ScimConfig {
  /** Requests one SCIM token may make (RATE_LIMIT_SCIM_PER_TOKEN, default 600 a minute). */
  readonly requestsPerToken: RateLimit;
  /** The largest page a list answers with (SCIM_MAX_RESULTS, default 200): a larger `count` is lowered to it. */
  readonly maxResults: number;
}

declare module '../config.ts' {
  interface Config {
    readonly scim: ScimConfig;
  }
}

export const scimConfigSection: ConfigSection = (read) => ({
  scim: {
    requestsPerToken: read.rateLimit('RATE_LIMIT_SCIM_PER_TOKEN', { points: 600, durationSeconds: 60 }),
    maxResults: read.integer('SCIM_MAX_RESULTS', 200, { min: 1, max: 1000 }),
  },
});
