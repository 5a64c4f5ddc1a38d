import type { FastifyRequest } from 'fastify';

/**
 * A classic HTML form post (the only form encoding we parse): answered with redirects rather
 * than JSON.
 */
export function isFormPost(request: FastifyRequest): boolean {
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return contentType === 'application/x-www-form-urlencoded';
}
