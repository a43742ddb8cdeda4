// A result that is there at once or later. On SQLite the hottest lookups have their rows as soon
// as the statement returns (db/prepared.ts); handing those on as values rather than promises lets
// `GET /api/users/{id}` be answered in the turn its request arrived in, with no promise, microtask
// or allocation per hop. Callers that `await` one see no difference.

export type Awaitable<T> = T | Promise<T>;

/**
 * `f` of the value: at once for a value, when it settles for a promise (whose rejection passes
 * through). `f` may itself answer later: a promise it returns is the result's (then() flattens it).
 */
export function mapAwaitable<T, R>(value: Awaitable<T>, f: (value: T) => Awaitable<R>): Awaitable<R> {
  return value instanceof Promise ? value.then(f) : f(value);
}
