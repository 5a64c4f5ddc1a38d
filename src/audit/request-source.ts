import type { FastifyRequest } from 'fastify';
import type { AuditSource } from './audit.service.ts';

/** The audit source of an HTTP request: who is acting (null before sign-in) and their client. */
export function requestSource(request: FastifyRequest, actorUserId: string | null): AuditSource {
  return { actorUserId, ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
}
