/**
 * A request hook whose common case is decided without waiting: `run` returns undefined when there
 * is nothing to do (the request goes on at once, as from a callback hook), or the promise of the
 * work that needs I/O (awaited as an async hook is). An async hook costs a promise and a turn of
 * the microtask queue on every request; the route guard and the access policies need neither on
 * most of them (public paths, exempt paths).
 *
 * Fastify runs such a function as it runs both kinds: a callback hook calls `done`, an async one
 * returns a promise; a reply sent by the slow path ends the request exactly as from an async hook.
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';

export function syncFirstHook(run: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown> | undefined): onRequestHookHandler {
  const hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    const pending = run(request, reply);
    if (pending === undefined) {
      done();
      return undefined;
    }
    return pending;
  };
  return hook as unknown as onRequestHookHandler;
}
