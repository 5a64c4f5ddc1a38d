/**
 * A module's service whose code is imported when it is first called, not when the server starts
 * (issue 38, part 3: module code loads when first used; perf/analysis.md). The registry holds a
 * stand-in of the service's shape: calling any of its methods imports the implementation (once:
 * concurrent first calls share the import, a failed import is tried again at the next call), builds
 * the service and calls the real method. After that, a member read returns the real one.
 *
 * Only a service whose every member is an asynchronous method (or a group of them: `scim.users.list`)
 * can wait for its code, so `Deferrable` refuses, at compile time, a property or a synchronous method.
 * The stand-in is not thenable (its `then` is undefined), so it can be returned from an async
 * function and kept in a promise as the service itself.
 *
 * Where it pays: a module whose services only requests reach (an admin area, SCIM, SSO, the OpenID
 * clients) keeps its routes (Fastify needs them before it listens) and its declarations at start,
 * and its services, stores and what only they import in a chunk of the bundle that the first call
 * loads. test/start-footprint.test.ts names the files a default start must not load.
 */

/** A shape every member of which can wait for the code behind it. */
export type Deferrable<T> = {
  readonly [K in keyof T]: T[K] extends (...args: never[]) => infer R
    ? R extends Promise<unknown>
      ? T[K]
      : never
    : T[K] extends object
      ? Deferrable<T[K]>
      : never;
};

type Member = (...args: unknown[]) => unknown;

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
  /** The real member at `path` once built (a method bound to its owner, so `this` is the service's), kept for the next read. */
  const reals = new Map<string, unknown>();
  const real = (service: T, path: readonly string[]): unknown => {
    const key = path.join('.');
    if (reals.has(key)) return reals.get(key);
    let owner: unknown = service;
    for (const part of path.slice(0, -1)) owner = (owner as Record<string, unknown>)[part];
    const value = (owner as Record<string, unknown>)[path[path.length - 1]!];
    const member = typeof value === 'function' ? (value as Member).bind(owner) : value;
    reals.set(key, member);
    return member;
  };
  const standIns = new Map<string, unknown>();
  const standIn = (path: readonly string[]): unknown => {
    const key = path.join('.');
    let made = standIns.get(key);
    if (made === undefined) {
      made = new Proxy(function deferred() {}, {
        get: (_target, name) => {
          if (typeof name !== 'string' || name === 'then') return undefined;
          return built !== undefined ? real(built, [...path, name]) : standIn([...path, name]);
        },
        apply: async (_target, _this, args: unknown[]) => (real(await ready(), path) as Member)(...args),
      });
      standIns.set(key, made);
    }
    return made;
  };
  return new Proxy({} as T, {
    get: (_target, name) => {
      if (typeof name !== 'string' || name === 'then') return undefined;
      if (built === undefined) return standIn([name]);
      // The path every call takes once built (an API key's check, say): one map read, nothing made.
      const member = reals.get(name);
      return member !== undefined ? member : real(built, [name]);
    },
  });
}
