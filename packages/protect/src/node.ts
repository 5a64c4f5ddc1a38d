/**
 * `gatehouse-protect/node`: the Express / Connect / node:http middleware, with `req.gatehouse`
 * typed for Express (`Express.Request`) and for plain node:http handlers (`ProtectedRequest`).
 *
 *   import { createProtector } from 'gatehouse-protect';
 *   import { toNodeMiddleware } from 'gatehouse-protect/node';
 *   app.use(toNodeMiddleware(createProtector({ issuer: 'https://auth.example.com' })));
 *   app.get('/dashboard', (req, res) => res.send(req.gatehouse?.userId));
 *   app.get('/api/items', (req, res) => res.json({ caller: req.gatehouseClient?.clientId })); // a machine: no user
 */
import type { IncomingMessage } from 'node:http';
import type { GatehouseClient, GatehouseUser } from './protector.types.ts';

export { toNodeMiddleware } from './adapters.ts';
export type { GatehouseClient, GatehouseUser } from './protector.types.ts';

/** A node:http request once the middleware let it through. */
export type ProtectedRequest = IncomingMessage & { gatehouse?: GatehouseUser | null; gatehouseClient?: GatehouseClient | null };

declare global {
  // Express merges its Request type from this global namespace (as @types/express documents).
  namespace Express {
    interface Request {
      /** The user behind the request's token, set by toNodeMiddleware; null on paths that need no session. */
      gatehouse?: GatehouseUser | null;
      /** The app behind a token Gatehouse's OpenID Provider issued (its id and scopes, and the user it calls for, if any); null otherwise. */
      gatehouseClient?: GatehouseClient | null;
    }
  }
}
