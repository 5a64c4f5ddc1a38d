/**
 * A module's service whose code is imported when it is first called, not when the server starts
 * (issue 38, part 3: module code loads when first used; perf/analysis.md). The registry holds a
 * stand-in of the service's shape: calling any of its methods imports the implementation (once:
 * concurrent first calls share the import; when `load` fails, the call that saw it fails and the
 * next call runs `load` again, though Node keeps the error of a module whose evaluation threw),
 * builds the service and calls the real method. After that, a member read returns the real one.
 *
 * Only a service whose every member is an asynchronous method (or a group of them: `scim.users.list`)
 * can wait for its code, so `Deferrable` refuses, at compile time, a property or a method that may
 * answer without a promise. The stand-in is not thenable (its `then` is undefined), so it can be
 * returned from an async function and kept in a promise as the service itself; nor does it answer
 * to the names every object has (`toJSON`, `toString`, `constructor`…), so serialising or logging
 * it by mistake starts no import. It has no own keys: never spread it or list its members.
 *
 * Where it pays: a module whose services only requests reach (an admin area, SCIM, SSO, the OpenID
 * clients) keeps its routes (Fastify needs them before it listens) and its declarations at start,
 * and its services, stores and what only they import in a chunk of the bundle that the first call
 * loads. test/start-footprint.test.ts names the files a default start must not load.
 */

/** A shape every member of which can wait for the code behind it. */
export type Deferrable<T> = {
  readonly [K in keyof T]: T[K] extends (...args: never[]) => infer R
    ? // Not distributed over a union: `X | Promise<X>` may answer at once, so it cannot wait.
      [R] extends [Promise<unknown>]
      ? T[K]
      : never
    : T[K] extends object
      ? Deferrable<T[K]>
      : never;
};

type Member = (...args: unknown[]) => unknown;

/** Names no service member has: a promise's, and those every object answers to (serialisers and loggers ask for them). */
const NOT_MEMBERS: ReadonlySet<string> = new Set(['then', 'toJSON', ...Object.getOwnPropertyNames(Object.prototype)]);

/** `load` imports the implementation and builds the service; the answer stands in for it until its first call. */
export function deferredService<T extends Deferrable<T>>(load: () => Promise<T>): T {
  let built: T | undefined;
  let loading: Promise<T> | undefined;
  const ready = (): Promise<T> =>
    (loading ??= load().then(
      (service) => (built = service),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));

  /** The real member at `path` of the built service: a method bound to its owner (so `this` is the service's), or a group. */
  const real = (service: T, path: readonly string[]): unknown => {
    let owner: unknown = service;
    for (const part of path.slice(0, -1)) owner = (owner as Record<string, unknown>)[part];
    const value = (owner as Record<string, unknown>)[path[path.length - 1]!];
    return typeof value === 'function' ? (value as Member).bind(owner) : value;
  };

  /**
   * The stand-in for the group at `path` (the service itself at []) and, below the top, the method
   * there. Each keeps the real members it has handed out once built, by name: a stand-in taken
   * before the build (a route plugin's `scim.users`) reads them with one map lookup after it.
   */
  const standIns = new Map<string, object>();
  const standIn = (path: readonly string[]): object => {
    const key = path.join('.');
    let made = standIns.get(key);
    if (made !== undefined) return made;
    const reals = new Map<string, unknown>();
    const callable = path.length > 0;
    made = new Proxy(callable ? function deferred() {} : {}, {
      get: (_target, name) => {
        if (typeof name !== 'string' || NOT_MEMBERS.has(name)) return undefined;
        if (built === undefined) return standIn([...path, name]);
        if (reals.has(name)) return reals.get(name);
        const member = real(built, [...path, name]);
        reals.set(name, member);
        return member;
      },
      ...(callable && {
        apply: async (_target: unknown, _this: unknown, args: unknown[]) => {
          const method = real(await ready(), path);
          if (typeof method !== 'function') throw new TypeError(`${key} is not a method of the service`);
          return (method as Member)(...args);
        },
      }),
    });
    standIns.set(key, made);
    return made;
  };
  return standIn([]) as T;
}
