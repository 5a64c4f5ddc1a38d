/**
 * `protect()` for servers that do not speak Web `Request`/`Response`: Node/Express-style
 * middleware and a Fastify `onRequest` hook. Both hand the verified user to the app.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatehouseClient, GatehouseUser, PresentedCredentials, Protector } from './protector.types.ts';

type NodeRequest = IncomingMessage & { gatehouse?: GatehouseUser | null; gatehouseClient?: GatehouseClient | null; originalUrl?: string };
type Next = (error?: unknown) => void;

/** The two headers the token check reads. The client's Host header is never read. */
function credentialsOf(request: { headers: IncomingMessage['headers'] }): PresentedCredentials {
  return { authorization: request.headers.authorization, cookie: request.headers.cookie };
}

async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => res.setHeader(name, value));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/**
 * `app.use(toNodeMiddleware(protector))` in Express or Connect, or call it from a plain
 * `http.createServer` handler. Allowed requests continue with `req.gatehouse` set (null when the
 * path needed no session, or for a machine's own token) and `req.gatehouseClient` (the app, for a
 * token Gatehouse's OpenID Provider issued).
 */
export function toNodeMiddleware(protector: Protector) {
  return (req: NodeRequest, res: ServerResponse, next: Next): void => {
    protector
      .evaluateCredentials(credentialsOf(req), req.originalUrl ?? req.url ?? '/')
      .then(async ({ user, client, denial }) => {
        if (denial !== null) return sendWebResponse(denial, res);
        req.gatehouse = user;
        req.gatehouseClient = client;
        next();
      })
      .catch(next);
  };
}

interface FastifyLikeRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  gatehouse?: GatehouseUser | null;
  gatehouseClient?: GatehouseClient | null;
}
interface FastifyLikeReply {
  code(status: number): FastifyLikeReply;
  header(name: string, value: string): FastifyLikeReply;
  send(payload?: unknown): FastifyLikeReply;
}

/** `app.addHook('onRequest', toFastifyHook(protector))`; allowed requests get `request.gatehouse`. */
export function toFastifyHook(protector: Protector) {
  return async (request: FastifyLikeRequest, reply: FastifyLikeReply): Promise<FastifyLikeReply | undefined> => {
    const { user, client, denial } = await protector.evaluateCredentials(credentialsOf(request), request.url);
    if (denial === null) {
      request.gatehouse = user;
      request.gatehouseClient = client;
      return undefined;
    }
    reply.code(denial.status);
    denial.headers.forEach((value, name) => reply.header(name, value));
    return reply.send(Buffer.from(await denial.arrayBuffer()));
  };
}
