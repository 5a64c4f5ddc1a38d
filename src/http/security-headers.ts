/**
 * Headers on every response: no sniffing, no framing, no referrer to other sites, a CSP that lets a
 * JSON answer do nothing if a browser ever renders it (pages send their own, see `web/render.ts`),
 * HSTS for a year when AUTH_URL is https, `Cache-Control: no-store` unless a route says otherwise
 * (the JWKS and the stylesheet do), and the request id. CORS is off unless CORS_ORIGINS names
 * origins: then exactly those may call the API from a browser, without cookies (Bearer tokens
 * only), so no origin is ever reflected with credentials.
 *
 * The values come from `helmet` and are computed once at start: they depend on configuration only.
 * (`@fastify/helmet` rebuilt them on every request, which cost 5–12 % of a fast route's time.)
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import cors from '@fastify/cors';
import type { Config } from '../config.ts';

const ONE_YEAR_SECONDS = 365 * 86_400;

function helmetOptions(config: Pick<Config, 'isSecureOrigin'>): HelmetOptions {
  return {
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
  };
}

/** The headers helmet would set on a response, read once by running it against a recorder. */
export function staticSecurityHeaders(config: Pick<Config, 'isSecureOrigin'>): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader(name: string, value: string) {
      headers[name.toLowerCase()] = value;
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  };
  helmet(helmetOptions(config))({} as never, recorder as never, (error?: unknown) => {
    if (error) throw error;
  });
  headers['cache-control'] = 'no-store';
  return Object.freeze(headers);
}

export type ResponseHeaderSetter = (request: FastifyRequest, reply: FastifyReply) => void;

/** Sets the security headers, the no-store default and `x-request-id` on a reply. */
export function createResponseHeaderSetter(config: Pick<Config, 'isSecureOrigin'>): ResponseHeaderSetter {
  const headers = staticSecurityHeaders(config);
  return (request, reply) => {
    void reply.headers(headers).header('x-request-id', request.id);
  };
}

/**
 * Register first: the headers are set before any other hook can refuse the request. Fastify's own
 * early refusals (an undecodable URL) call `setHeaders` from `frameworkErrors`.
 */
export async function registerSecurityHeaders(
  app: FastifyInstance,
  config: Pick<Config, 'corsOrigins'>,
  setHeaders: ResponseHeaderSetter,
): Promise<void> {
  // A callback hook, not an async one: this runs on every request and needs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    setHeaders(request, reply);
    done();
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
