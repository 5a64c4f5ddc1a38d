/**
 * `protect()` for servers that do not speak Web `Request`/`Response`: Node/Express-style
 * middleware and a Fastify `onRequest` hook. Both hand the verified user to the app.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatehouseUser, Protector } from './protect.ts';

type NodeRequest = IncomingMessage & { gatehouse?: GatehouseUser | null; originalUrl?: string; protocol?: string };
type Next = (error?: unknown) => void;

/** Builds a Web Request carrying what the rules and the token check read: method, URL, headers. */
function toWebRequest(request: { method?: string; url?: string; headers: IncomingMessage['headers'] }, protocol = 'http'): Request {
  const host = typeof request.headers.host === 'string' ? request.headers.host : 'localhost';
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) headers.set(name, value.join(', '));
  }
  // Concatenated, never resolved against a base: `//admin` resolved would become host "admin", path "/".
  const path = (request.url ?? '/').startsWith('/') ? request.url ?? '/' : `/${request.url}`;
  return new Request(`${protocol}://${host}${path}`, { method: request.method ?? 'GET', headers });
}

async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => res.setHeader(name, value));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/**
 * `app.use(toNodeMiddleware(protector))` in Express or Connect, or call it from a plain
 * `http.createServer` handler. Allowed requests continue with `req.gatehouse` set (null when the
 * path needed no session).
 */
export function toNodeMiddleware(protector: Protector) {
  return (req: NodeRequest, res: ServerResponse, next: Next): void => {
    const request = toWebRequest({ method: req.method, url: req.originalUrl ?? req.url, headers: req.headers }, req.protocol);
    protector
      .evaluate(request)
      .then(async ({ user, denial }) => {
        if (denial !== null) return sendWebResponse(denial, res);
        req.gatehouse = user;
        next();
      })
      .catch(next);
  };
}

interface FastifyLikeRequest {
  method: string;
  url: string;
  protocol?: string;
  headers: IncomingMessage['headers'];
  gatehouse?: GatehouseUser | null;
}
interface FastifyLikeReply {
  code(status: number): FastifyLikeReply;
  header(name: string, value: string): FastifyLikeReply;
  send(payload?: unknown): FastifyLikeReply;
}

/** `app.addHook('onRequest', toFastifyHook(protector))`; allowed requests get `request.gatehouse`. */
export function toFastifyHook(protector: Protector) {
  return async (request: FastifyLikeRequest, reply: FastifyLikeReply): Promise<FastifyLikeReply | undefined> => {
    const webRequest = toWebRequest(request, request.protocol);
    const { user, denial } = await protector.evaluate(webRequest);
    if (denial === null) {
      request.gatehouse = user;
      return undefined;
    }
    reply.code(denial.status);
    denial.headers.forEach((value, name) => reply.header(name, value));
    return reply.send(Buffer.from(await denial.arrayBuffer()));
  };
}
