// The hottest reads (a user by id, a session by its token) are compiled once by their repository
// and run here with each request's parameters. Through Kysely's executor a query takes a connection
// through a chain of async steps (a mutex, the driver, the connection, the release), several
// promises per query; on the database's own Kysely instance this goes straight to the connection
// instead: on SQLite the cached node:sqlite statement, run synchronously when no transaction holds
// the single connection; on PostgreSQL one query on the pool. Inside a transaction, and whenever
// the shortcut declines, the query goes through Kysely as any other (docs/benchmarks.md).
import type { CompiledQuery, Kysely } from 'kysely';
import type { Tables } from './schema.ts';

/**
 * Runs a compiled query's SQL directly, or returns undefined to let Kysely run it. Rows come back
 * as Kysely's own driver would return them.
 */
export type DirectRunner = (
  sql: string,
  parameters: readonly unknown[],
) => readonly unknown[] | Promise<readonly unknown[]> | undefined;

const runners = new WeakMap<Kysely<Tables>, DirectRunner>();

/** Called by openDatabase for the instance it makes; transactions' instances have no runner. */
export function setDirectRunner(db: Kysely<Tables>, runner: DirectRunner): void {
  runners.set(db, runner);
}

/**
 * The rows of `query` (compiled with placeholder values) run with `parameters`, on `db`: an array
 * at once on SQLite, a promise otherwise (callers await either). Not async, so the SQLite answer
 * costs no promise at all.
 */
export function runPrepared<R>(
  db: Kysely<Tables>,
  query: CompiledQuery<R>,
  parameters: readonly unknown[],
): readonly R[] | Promise<readonly R[]> {
  const rows = runners.get(db)?.(query.sql, parameters);
  if (rows !== undefined) return rows as readonly R[] | Promise<readonly R[]>;
  return db.executeQuery<R>({ ...query, parameters }).then((result) => result.rows);
}
