/**
 * NUL characters are refused everywhere, before any handler: PostgreSQL cannot store them in
 * text (a 500 waiting to happen), SQLite stores them and then matches oddly, and no legitimate
 * e-mail, name, token or path contains one. One rule here instead of a check in every schema.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.ts';

const ENCODED_NUL = /%00/i;

export function registerInputHygiene(app: FastifyInstance): void {
  // Callback hooks where no I/O happens: they run on every request and need no promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const hasNul = ENCODED_NUL.test(request.url) || request.url.includes('\u0000');
    done(hasNul ? new AppError('BAD_REQUEST', { message: 'NUL characters are not accepted.' }) : undefined);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const hasNul = request.body !== undefined && request.body !== null && containsNul(request.body);
    done(hasNul ? new AppError('BAD_REQUEST', { message: 'NUL characters are not accepted.' }) : undefined);
  });
}

function containsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 32 || value === null || typeof value !== 'object') return false;
  for (const [key, child] of Object.entries(value)) {
    if (key.includes('\u0000') || containsNul(child, depth + 1)) return true;
  }
  return false;
}
