// The hottest reads (a user by id, a session by its token) are compiled once by their repository
// and run here with each request's parameters. Through Kysely's executor a query takes a connection
// through a chain of async steps (a mutex, the driver, the connection, the release), several
// promises per query; on the database's own Kysely instance this goes straight to the connection
// instead: on SQLite the cached node:sqlite statement, run synchronously when no transaction holds
// the single connection; on PostgreSQL one query on the pool. Inside a transaction, and whenever
// the shortcut declines, the query goes through Kysely as any other (docs/benchmarks.md).
//
// Rows come back as arrays of values in the select list's order, not as objects: node:sqlite
// builds a row object key by key through V8's API, which showed in the profile of a lookup as map
// transitions and megamorphic stores, and returns arrays instead when asked. pg's arrays (rowMode
// 'array') need a query config object, which pg copies through Object.defineProperties, dearer
// than taking the values of the row object it builds (decision 138). The repository that compiled
// the query knows its column order.
import type { CompiledQuery, Kysely } from 'kysely';
import type { Awaitable } from '../shared/awaitable.ts';
import type { Tables } from './schema.ts';

/** A row as the values of the query's select list, in order. */
export type Tuple = readonly unknown[];

/**
 * Runs a compiled query's SQL directly, or returns undefined to let Kysely run it. Values come
 * back as Kysely's own driver would return them (bigints, Dates).
 */
export type DirectRunner = (
  sql: string,
  parameters: readonly unknown[],
) => Awaitable<readonly Tuple[]> | undefined;

const runners = new WeakMap<Kysely<Tables>, DirectRunner>();

/** Called by openDatabase for the instance it makes; transactions' instances have no runner. */
export function setDirectRunner(db: Kysely<Tables>, runner: DirectRunner): void {
  runners.set(db, runner);
}

/**
 * The rows of `query` (compiled with placeholder values) run with `parameters`, on `db`, each as
 * its select list's values in order: an array at once on SQLite, a promise otherwise (callers
 * await either). Not async, so the SQLite answer costs no promise at all.
 */
export function runPrepared(
  db: Kysely<Tables>,
  query: CompiledQuery<unknown>,
  parameters: readonly unknown[],
): Awaitable<readonly Tuple[]> {
  const rows = runners.get(db)?.(query.sql, parameters);
  if (rows !== undefined) return rows;
  return db.executeQuery<object>({ ...query, parameters }).then((result) => tuplesOf(result.rows));
}

/**
 * Row objects (Kysely's, pg's) as tuples: their keys are in select-list order, and the hot
 * queries name no column twice, so no value is lost to a repeated key.
 */
export function tuplesOf(rows: readonly object[]): Tuple[] {
  return rows.map((row) => Object.values(row));
}
