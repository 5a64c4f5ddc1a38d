/**
 * Headers on every response, with `@fastify/helmet`: no sniffing, no framing, no referrer to other
 * sites, a CSP that lets a JSON answer do nothing if a browser ever renders it (pages send their
 * own, see `ui/render.ts`), HSTS for a year when AUTH_URL is https, and `Cache-Control: no-store`
 * unless a route says otherwise (the JWKS and the stylesheet do). CORS is off unless CORS_ORIGINS
 * names origins: then exactly those may call the API from a browser, without cookies (Bearer tokens
 * only), so no origin is ever reflected with credentials.
 */
import type { FastifyInstance } from 'fastify';
import helmet from '@fastify/helmet';
import cors from '@fastify/cors';
import type { Config } from '../config.ts';

const ONE_YEAR_SECONDS = 365 * 86_400;

export async function registerSecurityHeaders(app: FastifyInstance, config: Pick<Config, 'isSecureOrigin' | 'corsOrigins'>): Promise<void> {
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
        formAction: ["'none'"],
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: config.isSecureOrigin ? { maxAge: ONE_YEAR_SECONDS, includeSubDomains: true } : false,
  });

  app.addHook('onSend', async (_request, reply) => {
    if (!reply.hasHeader('cache-control')) void reply.header('cache-control', 'no-store');
  });

  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.corsOrigins],
      credentials: false,
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['content-type', 'authorization'],
      exposedHeaders: ['retry-after', 'x-request-id'],
      maxAge: 600,
    });
  }
}
