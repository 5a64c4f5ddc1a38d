/**
 * Logger options: pino with request ids, and nothing secret in any line. Request logs carry
 * method, path and peer only (never headers or bodies); query values that can be bearer secrets
 * are masked; and the redact list catches secrets that a handler might log by mistake.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Config } from '../config.ts';

const SECRET_QUERY_PARAMS = /([?&](?:token|code|state|password|refresh_?token|access_?token|id_?token)=)[^&#]*/gi;

export const REDACTED_PATHS = [
  'password',
  'newPassword',
  'token',
  'refreshToken',
  'accessToken',
  'authSecret',
  '*.password',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.accessToken',
  '*.authSecret',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
];

export function maskSecretsInUrl(url: string): string {
  return url.replace(SECRET_QUERY_PARAMS, '$1[REDACTED]');
}

export function loggerOptions(config: Pick<Config, 'logLevel'>): NonNullable<FastifyServerOptions['logger']> {
  return {
    level: config.logLevel,
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    serializers: {
      req(request: FastifyRequest) {
        return { method: request.method, url: maskSecretsInUrl(request.url), remoteAddress: request.ip };
      },
    },
  };
}

/** Request ids are ours (a client-chosen id could forge log lines); echoed as `x-request-id`. */
export function generateRequestId(): string {
  return randomUUID();
}
