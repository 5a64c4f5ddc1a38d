/**
 * `then` for a value that may already be there: `next` runs at once, with no promise and no turn of
 * the microtask queue, when `value` is not a promise; after it settles when it is. For hot paths
 * whose common case needs no I/O (a kept API key, a rate-limit lease with points left).
 */
export function thenNow<T, U>(value: T | Promise<T>, next: (value: T) => U): U | Promise<Awaited<U>> {
  return value instanceof Promise ? (value.then(next) as Promise<Awaited<U>>) : next(value);
}
