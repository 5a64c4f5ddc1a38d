/**
 * `protect()` for servers that do not speak Web `Request`/`Response`: Node/Express-style
 * middleware and a Fastify `onRequest` hook. Both hand the verified user to the app.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatehouseUser, Protector } from './protect.ts';

type NodeRequest = IncomingMessage & { gatehouse?: GatehouseUser | null; originalUrl?: string };
type Next = (error?: unknown) => void;

/**
 * A Web Request carrying what the token check reads (method, headers) under a fixed origin. The
 * client's Host header never goes into the URL: `Host: x?` would turn `/admin` into a query string.
 * The rules read the raw request target instead (passed separately as `rawPath`).
 */
function toWebRequest(request: { method?: string; headers: IncomingMessage['headers'] }): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) headers.set(name, value.join(', '));
  }
  return new Request('http://protect.invalid/', { method: request.method ?? 'GET', headers });
}

const BAD_REQUEST_BODY = JSON.stringify({ error: 'BAD_REQUEST', message: 'The request is malformed.' });

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
    let request: Request;
    try {
      request = toWebRequest(req);
    } catch {
      // Headers a Request will not carry (invalid names or values): refuse, never crash the server.
      res.statusCode = 400;
      res.setHeader('content-type', 'application/json; charset=utf-8');
      res.end(BAD_REQUEST_BODY);
      return;
    }
    protector
      .evaluate(request, req.originalUrl ?? req.url ?? '/')
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
    let webRequest: Request;
    try {
      webRequest = toWebRequest(request);
    } catch {
      return reply.code(400).header('content-type', 'application/json; charset=utf-8').send(BAD_REQUEST_BODY);
    }
    const { user, denial } = await protector.evaluate(webRequest, request.url);
    if (denial === null) {
      request.gatehouse = user;
      return undefined;
    }
    reply.code(denial.status);
    denial.headers.forEach((value, name) => reply.header(name, value));
    return reply.send(Buffer.from(await denial.arrayBuffer()));
  };
}
