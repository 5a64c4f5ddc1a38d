/**
 * Health for load balancers and orchestrators:
 * - `GET /api/health/live`: the process answers (restart it when this fails);
 * - `GET /api/health/ready`: storage reachable, migrations current, signing keys loaded, not
 *   shutting down (send it traffic only when this answers 200; the 503 names each failed check);
 * - `GET /api/health`: 200 when storage answers within a bound, 503 otherwise (as it always was).
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Storage } from '../storage/database.ts';
import { toErrorBody } from '../errors.ts';
import { sendError } from '../http/error-handler.ts';
import { errorResponse } from '../http/schemas.ts';
import { withTimeout, type Readiness } from './readiness.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';

// For load balancers: no session, and nothing a policy could refuse.
const forAnyone = { access: access.anyone({ exempt: [DURING_ENROLMENT] }) };

const HEALTH_TIMEOUT_MS = 2_000;
const RETRY_AFTER_SECONDS = 5;

const checks = z
  .object({
    storage: z.string().describe('`ok`, or why not: unreachable, not answering in time'),
    migrations: z.string().describe('`ok`, or how many are pending'),
    signingKeys: z.string().describe('`ok`, or `not loaded`'),
    shutdown: z.string().describe('`ok`, or `shutting down`'),
  })
  .meta({ id: 'ReadinessChecks' });

export const healthRoutes: FastifyPluginAsyncZod<{ storage: Storage; readiness: Readiness }> = async (app, { storage, readiness }) => {
  app.addHook('preClose', async () => readiness.markShuttingDown());

  app.get(
    '/api/health',
    {
      config: forAnyone,
      schema: {
        tags: ['operations'],
        summary: 'Liveness and storage readiness',
        security: [],
        response: { 200: z.object({ status: z.literal('ok') }), 503: errorResponse.describe('Storage is not answering (SERVICE_UNAVAILABLE), with Retry-After') },
      },
    },
    async (request, reply) => {
      try {
        await withTimeout(storage.ping(), HEALTH_TIMEOUT_MS);
        return { status: 'ok' as const };
      } catch (error) {
        request.log.warn({ err: error }, 'health check: storage unavailable');
        return sendError(reply, 503, toErrorBody('SERVICE_UNAVAILABLE', 'Storage is not answering.'), RETRY_AFTER_SECONDS);
      }
    },
  );

  app.get(
    '/api/health/live',
    { config: forAnyone, schema: { tags: ['operations'], summary: 'Liveness: the process answers', security: [], response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/api/health/ready',
    {
      config: forAnyone,
      schema: {
        tags: ['operations'],
        summary: 'Readiness: storage reachable, migrations current, signing keys loaded, not shutting down',
        security: [],
        response: {
          200: z.object({ status: z.literal('ok'), checks }),
          503: z.object({ error: z.literal('SERVICE_UNAVAILABLE'), message: z.string(), checks }).describe('Not ready: `checks` says which check failed and why; with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const result = await readiness.check();
      if (result.isReady) return { status: 'ok' as const, checks: result.checks };
      const failed = Object.entries(result.checks).filter(([, value]) => value !== 'ok').map(([name]) => name);
      request.log.warn({ failed }, 'readiness check failed');
      void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      return reply.code(503).send({ error: 'SERVICE_UNAVAILABLE' as const, message: `Not ready: ${failed.join(', ')}.`, checks: result.checks });
    },
  );
};
