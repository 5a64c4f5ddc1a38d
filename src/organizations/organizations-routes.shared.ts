/**
 * What the organizations API's route files share: their options, the route options every one of
 * them declares (a signed-in caller: `access.user()`), and how a handler finds its caller.
 */
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import type { Config } from '../config.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { requestSource } from '../audit/request-source.ts';
import type { UserService } from '../users/user.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { OrganizationsService } from './organizations.service.ts';

export interface OrganizationRouteOptions {
  organizations: OrganizationsService;
  users: UserService;
  sessions: SessionService;
  config: Config;
  clock: Clock;
}

/** The Fastify instance the organizations API's routes are added to (zod-typed). */
export type OrganizationsApp = Parameters<FastifyPluginAsyncZod<OrganizationRouteOptions>>[0];

export const tags = ['organizations'];
export const security = [{ bearer: [] }];
export const config = { access: access.user() };

/** The signed-in caller: as the service's actor, and as the audit log's source. */
export function caller(request: FastifyRequest) {
  const auth = signedIn(request);
  return { auth, actor: { userId: auth.userId }, source: requestSource(request, auth.userId) };
}

/** The signed-in caller's account (gone meanwhile: 401). */
export async function currentUser(users: UserService, userId: string) {
  const user = await users.findUserById(userId);
  if (user === null) throw new AppError('UNAUTHENTICATED');
  return user;
}
