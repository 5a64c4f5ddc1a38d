/** `GET /api/health`: 200 when storage answers within a bound, 503 otherwise. */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Storage } from '../storage/database.ts';
import { toErrorBody } from '../errors.ts';
import { sendError } from '../http/error-handler.ts';
import { errorResponse } from '../http/schemas.ts';

const HEALTH_TIMEOUT_MS = 2_000;

export const healthRoutes: FastifyPluginAsyncZod<{ storage: Storage }> = async (app, { storage }) => {
  app.get(
    '/api/health',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness and storage readiness',
        response: { 200: z.object({ status: z.literal('ok') }), 503: errorResponse },
      },
    },
    async (request, reply) => {
      try {
        await withTimeout(storage.ping(), HEALTH_TIMEOUT_MS);
        return { status: 'ok' as const };
      } catch (error) {
        request.log.warn({ err: error }, 'health check: storage unavailable');
        return sendError(reply, 503, toErrorBody('SERVICE_UNAVAILABLE', 'Storage is not answering.'), 5);
      }
    },
  );
};

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
