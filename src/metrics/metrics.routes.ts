/**
 * The HTTP side of metrics: every answer counted (an `onResponse` hook on the root instance, so it
 * sees every route of both scopes and the 404s), and `GET /metrics` on the main port for a scraper
 * presenting METRICS_TOKEN as a Bearer token.
 *
 * `/metrics` is open to anyone as far as sessions go (it is outside the prefix rules' `/dashboard`,
 * `/admin`, `/api`) and protects itself with its own token; it is a GET, so no CSRF check applies;
 * it is left out of the OpenAPI document (an operator's endpoint, not the API's).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.ts';
import { access } from '../authorization/access.ts';
import type { MetricsService } from './metrics.service.ts';

export const METRICS_PATH = '/metrics';

/** Whether `header` is `Bearer <token>`, compared in constant time (both sides hashed first, so their lengths do not show either). */
export function presentsToken(header: string | undefined, token: string): boolean {
  const presented = /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
  if (presented === undefined) return false;
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(presented), digest(token));
}

/** Counts every answer of `app` (the root instance: its hooks apply to every route and scope). */
export function countResponses(app: FastifyInstance, metrics: MetricsService): void {
  // Callback style: no promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeHttp(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/** `GET /metrics` with `Authorization: Bearer <token>`; 401 otherwise. */
export function registerMetricsRoute(app: FastifyInstance, metrics: MetricsService, token: string): void {
  app.get(METRICS_PATH, { config: { access: access.anyone() }, schema: { hide: true } }, async (request, reply) => {
    if (!presentsToken(request.headers.authorization, token)) {
      void reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw new AppError('UNAUTHENTICATED', { message: 'Metrics need the METRICS_TOKEN as a Bearer token.' });
    }
    const text = await metrics.scrape();
    return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
  });
}
