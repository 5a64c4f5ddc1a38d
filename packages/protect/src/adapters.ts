/**
 * `protect()` for servers that do not speak Web `Request`/`Response`: Node/Express-style
 * middleware and a Fastify `onRequest` hook. Both hand the verified user to the app.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatehouseClient, GatehouseUser, PresentedCredentials, Protector } from './protector.types.ts';
import type { SignIn } from './sign-in.types.ts';

type NodeRequest = IncomingMessage & { gatehouse?: GatehouseUser | null; gatehouseClient?: GatehouseClient | null; originalUrl?: string };
type Next = (error?: unknown) => void;

/** The headers the token check reads, and the method a DPoP proof names. The client's Host header is never read. */
function credentialsOf(request: { headers: IncomingMessage['headers']; method?: string | undefined }): PresentedCredentials {
  const dpop = request.headers.dpop;
  return { authorization: request.headers.authorization, cookie: request.headers.cookie, dpop: typeof dpop === 'string' ? dpop : undefined, method: request.method };
}

async function sendWebResponse(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value);
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.appendHeader('set-cookie', cookies);
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** A sign-in path's form is small: a logout token, or nothing. */
const MAX_BODY_BYTES = 65_536;

/** The Web request sign-in mode reads: method, target and headers, and the body of a POST to one of its own paths. */
async function webRequestOf(req: NodeRequest & { body?: unknown }, rawPath: string, signIn: SignIn): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const item of [value].flat()) headers.append(name, item);
  }
  const url = new URL(rawPath, 'http://app.invalid');
  const ownPost = req.method === 'POST' && (url.pathname === signIn.paths.signOut || url.pathname === signIn.paths.backchannelLogout);
  if (!ownPost) return new Request(url, { method: req.method === 'HEAD' ? 'HEAD' : 'GET', headers });
  let body: string;
  if (req.readableEnded) {
    // A body parser ran first and read the stream: the form it parsed, if it parsed one
    // (Express's urlencoded; a JSON parser leaves `{}`, which is then no form: refused as such).
    body = req.body !== null && typeof req.body === 'object' ? new URLSearchParams(req.body as Record<string, string>).toString() : '';
  } else {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      // Too long for a logout token or a sign-out form: the handler refuses what is left of it.
      if (size > MAX_BODY_BYTES) return new Request(url, { method: 'POST', headers, body: 'x'.repeat(MAX_BODY_BYTES + 1) });
      chunks.push(chunk);
    }
    body = Buffer.concat(chunks).toString('utf8');
  }
  return new Request(url, { method: 'POST', headers, body });
}

function isSignIn(value: Protector | SignIn): value is SignIn {
  return typeof (value as SignIn).handle === 'function';
}

/**
 * `app.use(toNodeMiddleware(protector))` in Express or Connect, or call it from a plain
 * `http.createServer` handler. Allowed requests continue with `req.gatehouse` set (null when the
 * path needed no session, or for a machine's own token) and `req.gatehouseClient` (the app, for a
 * token Gatehouse's OpenID Provider issued).
 */
export function toNodeMiddleware(protector: Protector | SignIn) {
  if (isSignIn(protector)) return toNodeSignIn(protector);
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

/** Sign-in mode on Node: its paths answer; other requests go on with `req.gatehouse` and the session's cookies set. */
function toNodeSignIn(signIn: SignIn) {
  return (req: NodeRequest, res: ServerResponse, next: Next): void => {
    const rawPath = req.originalUrl ?? req.url ?? '/';
    webRequestOf(req, rawPath, signIn)
      .then((request) => signIn.handle(request, rawPath))
      .then(async ({ response, user, setCookie }) => {
        if (response !== null) return sendWebResponse(response, res);
        if (setCookie.length > 0) res.appendHeader('set-cookie', setCookie);
        req.gatehouse = user;
        req.gatehouseClient = null;
        next();
      })
      .catch(next);
  };
}

interface FastifyLikeRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  raw: IncomingMessage;
  gatehouse?: GatehouseUser | null;
  gatehouseClient?: GatehouseClient | null;
}
interface FastifyLikeReply {
  code(status: number): FastifyLikeReply;
  header(name: string, value: string): FastifyLikeReply;
  send(payload?: unknown): FastifyLikeReply;
}

async function sendToFastify(response: Response, reply: FastifyLikeReply): Promise<FastifyLikeReply> {
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') reply.header(name, value);
  });
  for (const cookie of response.headers.getSetCookie()) reply.header('set-cookie', cookie);
  return reply.send(Buffer.from(await response.arrayBuffer()));
}

/**
 * `app.addHook('onRequest', toFastifyHook(protector))`; allowed requests get `request.gatehouse`
 * (and `request.gatehouseClient`). In sign-in mode (`createSignIn`) the hook also answers the
 * sign-in paths, before any body parser (it reads their forms itself).
 */
export function toFastifyHook(protector: Protector | SignIn) {
  if (isSignIn(protector)) {
    return async (request: FastifyLikeRequest, reply: FastifyLikeReply): Promise<FastifyLikeReply | undefined> => {
      const { response, user, setCookie } = await protector.handle(await webRequestOf(request.raw, request.url, protector), request.url);
      if (response !== null) return sendToFastify(response, reply);
      for (const cookie of setCookie) reply.header('set-cookie', cookie);
      request.gatehouse = user;
      request.gatehouseClient = null;
      return undefined;
    };
  }
  return async (request: FastifyLikeRequest, reply: FastifyLikeReply): Promise<FastifyLikeReply | undefined> => {
    const { user, client, denial } = await protector.evaluateCredentials(credentialsOf(request), request.url);
    if (denial === null) {
      request.gatehouse = user;
      request.gatehouseClient = client;
      return undefined;
    }
    return sendToFastify(denial, reply);
  };
}
