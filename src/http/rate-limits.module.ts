/** Shared counters for rate limits: storage by default, Redis with REDIS_URL; memory while either fails. */
import { defineModule } from '../module.ts';
import * as rateLimitsTable from './migrations/0007-rate-limits.ts';
import { createRateLimiters, type RateLimiters } from './rate-limit.ts';
import { createRequestLimits } from './request-limits.ts';
import { rateLimitsConfigSection } from './rate-limits.config.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    rateLimiters: RateLimiters;
    limits: ReturnType<typeof createRequestLimits>;
  }
}

export const rateLimitsModule = defineModule({
  name: 'rate-limits',
  config: rateLimitsConfigSection,
  migrations: { '0007-rate-limits': rateLimitsTable },
  async provide({ db, clock, logger, config }) {
    const rateLimiters = await createRateLimiters({ db, clock, logger, redisUrl: config.redisUrl });
    return { rateLimiters, limits: createRequestLimits(rateLimiters, config.rateLimits) };
  },
  // Redis is connected (and a misconfigured one refused) when the app starts serving, not when built.
  jobs: ({ rateLimiters }) => [{ start: () => rateLimiters.start(), stop() {} }],
  close: ({ rateLimiters }) => rateLimiters.close(),
});
