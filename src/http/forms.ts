import type { FastifyRequest } from 'fastify';

/** The media type of a request body, lower-cased, without parameters (`; charset=…`). */
export function mediaType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * A classic HTML form post (the only form encoding we parse): answered with redirects rather
 * than JSON.
 */
export function isFormPost(request: FastifyRequest): boolean {
  return mediaType(request) === 'application/x-www-form-urlencoded';
}
