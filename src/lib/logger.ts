/**
 * What services and background jobs log through: pino's calling shape, so the process logger
 * (`createLogger` in `http/logging.ts`) and Fastify's own both fit, and tests can pass a recorder.
 */
export interface Logger {
  error(details: object, message: string): void;
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

/** Drops everything; for code whose caller has nowhere to log. */
export const silentLogger: Logger = { error() {}, warn() {}, info() {} };
