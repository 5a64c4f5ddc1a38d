/** The api-keys module's part of the configuration. */
import type { ConfigSection, RateLimit } from '../config.ts';

export interface ApiKeysConfig {
  /** API_KEYS (default true): off, no key is issued or accepted (existing ones are kept, unused). */
  readonly enabled: boolean;
  /** API_KEY_DEFAULT_TTL (default 90 days): a new key's lifetime when its creator names none. */
  readonly defaultTtlSeconds: number;
  /** API_KEY_MAX_TTL (default 366 days): the longest lifetime a key may be given. */
  readonly maxTtlSeconds: number;
  /** RATE_LIMIT_API_KEY (default 600/1m): requests one key may make, unless the key has a limit of its own. */
  readonly perKey: RateLimit;
}

declare module '../config.ts' {
  interface Config {
    readonly apiKeys: ApiKeysConfig;
  }
}

export const apiKeysConfigSection: ConfigSection = (read, _basis, problems) => {
  const defaultTtlSeconds = read.duration('API_KEY_DEFAULT_TTL', 90 * 86_400);
  const maxTtlSeconds = read.duration('API_KEY_MAX_TTL', 366 * 86_400);
  if (defaultTtlSeconds > maxTtlSeconds) problems.push('API_KEY_DEFAULT_TTL must not be longer than API_KEY_MAX_TTL');
  return {
    apiKeys: {
      enabled: read.boolean('API_KEYS', true),
      defaultTtlSeconds,
      maxTtlSeconds,
      perKey: read.rateLimit('RATE_LIMIT_API_KEY', { points: 600, durationSeconds: 60 }),
    },
  };
};
