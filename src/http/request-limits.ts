/**
 * The rate limits of the endpoints other than password sign-in (which has its own, failure-aware
 * throttle in `credentials/signin-throttle.ts`), as preHandlers for their routes. Limits by address
 * count every request for that address, whether or not it has an account, so a 429 tells nothing.
 */
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Config } from '../config.ts';
import { accountKey, clientKey, rateLimitHook, type RateLimiters } from './rate-limit.ts';

export type RequestLimits = ReturnType<typeof createRequestLimits>;

const byIp = (request: FastifyRequest) => clientKey(request.ip);

/** The address in a validated body, as a limiter key; null when there is none. */
const byBodyEmail = (request: FastifyRequest) => {
  const email = (request.body as { email?: unknown } | null | undefined)?.email;
  return typeof email === 'string' ? accountKey(email) : null;
};

export function createRequestLimits(limiters: RateLimiters, limits: Config['rateLimits']): Record<
  'signup' | 'forgotPassword' | 'verificationResend' | 'tokenUse' | 'refresh' | 'oauthStart',
  preHandlerAsyncHookHandler
> {
  return {
    signup: rateLimitHook([{ limiter: limiters.create('signup-ip', limits.signupPerIp), key: byIp }]),
    forgotPassword: rateLimitHook([
      { limiter: limiters.create('forgot-ip', limits.mailPerIp), key: byIp },
      { limiter: limiters.create('forgot-address', limits.mailPerAddress), key: byBodyEmail },
    ]),
    verificationResend: rateLimitHook([
      { limiter: limiters.create('resend-ip', limits.mailPerIp), key: byIp },
      { limiter: limiters.create('resend-address', limits.mailPerAddress), key: byBodyEmail },
    ]),
    tokenUse: rateLimitHook([{ limiter: limiters.create('token-ip', limits.tokenPerIp), key: byIp }]),
    refresh: rateLimitHook([{ limiter: limiters.create('refresh-ip', limits.refreshPerIp), key: byIp }]),
    oauthStart: rateLimitHook([{ limiter: limiters.create('oauth-ip', limits.oauthPerIp), key: byIp }]),
  };
}
