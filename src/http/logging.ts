/**
 * Logger options: pino with request ids, and nothing secret in any line. Request logs carry
 * method, path and peer only (never headers or bodies); query values that can be bearer secrets
 * are masked; and the redact list catches secrets that a handler might log by mistake.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import pino from 'pino';
import type { Config } from '../config.ts';
import type { Logger } from '../lib/logger.ts';

const SECRET_QUERY_NAME = /^(?:token|code|state|password|csrf_?token|refresh_?token|access_?token|id_?token)$/i;

export const REDACTED_PATHS = [
  'password',
  'newPassword',
  'token',
  'csrfToken',
  'refreshToken',
  'accessToken',
  'authSecret',
  '*.password',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.accessToken',
  '*.authSecret',
  '*.csrfToken',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
];

/** The URL with the values of secret-looking query parameters masked, however their names are encoded. */
export function maskSecretsInUrl(url: string): string {
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const masked = url
    .slice(queryStart + 1)
    .split('&')
    .map((pair) => {
      const [rawName = '', ...value] = pair.split('=');
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        return `${rawName}=[REDACTED]`; // undecodable: do not guess
      }
      return SECRET_QUERY_NAME.test(name) && value.length > 0 ? `${rawName}=[REDACTED]` : pair;
    })
    .join('&');
  return `${url.slice(0, queryStart)}?${masked}`;
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

/**
 * The logger of work outside a request (background jobs, failed audit writes): same level and
 * redaction as the request logs. The server writes to stdout like Fastify; the CLI passes 2
 * (stderr), keeping its stdout for output.
 */
export function createLogger(config: Pick<Config, 'logLevel'>, fd: 1 | 2 = 1): Logger {
  return pino({ level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' } }, pino.destination({ dest: fd, sync: true }));
}

/** Request ids are ours (a client-chosen id could forge log lines); echoed as `x-request-id`. */
export function generateRequestId(): string {
  return randomUUID();
}
