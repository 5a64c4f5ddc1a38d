/**
 * `gatehouse-protect/fastify`: the Fastify `onRequest` hook, with `request.gatehouse` typed.
 *
 *   import { createProtector } from 'gatehouse-protect';
 *   import { toFastifyHook } from 'gatehouse-protect/fastify';
 *   app.addHook('onRequest', toFastifyHook(createProtector({ issuer: 'https://auth.example.com' })));
 */
import type { GatehouseClient, GatehouseUser } from './protector.types.ts';
// Brings Fastify's types into the program, which the augmentation below extends (types only).
import type {} from 'fastify';

export { toFastifyHook } from './adapters.ts';
export type { GatehouseClient, GatehouseUser } from './protector.types.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The user behind the request's token, set by toFastifyHook; null on paths that need no session. */
    gatehouse?: GatehouseUser | null;
    /** The app behind a token Gatehouse's OpenID Provider issued (its id and scopes, and the user it calls for, if any); null otherwise. */
    gatehouseClient?: GatehouseClient | null;
  }
}
