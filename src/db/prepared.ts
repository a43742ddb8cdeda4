// The hottest reads (a user by id, a session by its token) are compiled once by their repository
// and run here with each request's parameters. Through Kysely's executor a query takes a connection
// through a chain of async steps (a mutex, the driver, the connection, the release), several
// promises per query; on the database's own Kysely instance this goes straight to the connection
// instead: on SQLite the cached node:sqlite statement, run synchronously when no transaction holds
// the single connection; on PostgreSQL a named statement on a pooled connection, run without pg's
// Query and Result (db/pg-statement.ts). Inside a transaction, and whenever the shortcut declines,
// the query goes through Kysely as any other (docs/benchmarks.md).
//
// Rows come back as arrays of values in the select list's order, not as objects: node:sqlite
// builds a row object key by key through V8's API, which showed in the profile of a lookup as map
// transitions and megamorphic stores, and returns arrays instead when asked; on PostgreSQL the
// values are parsed by position as they arrive (decision 141). The repository that compiled the
// query knows its column order.
import { createHash } from 'node:crypto';
import type { CompiledQuery, Kysely } from 'kysely';
import type { Awaitable } from '../shared/awaitable.ts';
import type { Tables } from './schema.ts';

/** A row as the values of the query's select list, in order. */
export type Tuple = readonly unknown[];

/** A compiled query with the name PostgreSQL keeps it under (see `named`). */
export type NamedQuery = CompiledQuery<unknown> & { readonly name: string };

/**
 * Runs a compiled query's SQL directly, or returns undefined to let Kysely run it. Values come
 * back as Kysely's own driver would return them (bigints, Dates). PostgreSQL keeps the statement,
 * by `name`, parsed, planned and described on each connection that runs it.
 */
export type DirectRunner = (
  sql: string,
  parameters: readonly unknown[],
  name: string,
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
  query: NamedQuery,
  parameters: readonly unknown[],
): Awaitable<readonly Tuple[]> {
  const rows = runners.get(db)?.(query.sql, parameters, query.name);
  if (rows !== undefined) return rows;
  return db.executeQuery<object>({ ...query, parameters }).then((result) => tuplesOf(result.rows));
}

/**
 * Kysely's row objects as tuples: their keys are in select-list order, and the hot queries name
 * no column twice, so no value is lost to a repeated key.
 */
function tuplesOf(rows: readonly object[]): Tuple[] {
  return rows.map((row) => Object.values(row));
}

/**
 * A compiled query with a name derived from its SQL: on PostgreSQL it is parsed, planned and
 * described once per connection (db/pg-statement.ts) rather than on every run.
 */
export function named(compiled: CompiledQuery<unknown>): NamedQuery {
  const name = `usher_${createHash('sha256').update(compiled.sql).digest('base64url').slice(0, 24)}`;
  return { ...compiled, name };
}

const SLOT = Symbol('slot');
/** Where a value goes in a query built once: Kysely takes it for a value and makes it a parameter. */
type Slot = { readonly [SLOT]: string };

/** A query compiled once, named, and run with each call's values by runPrepared. */
export interface SlottedQuery<K extends string> {
  readonly query: NamedQuery;
  /** The parameters of one run, in the compiled SQL's order. */
  parameters(values: Readonly<Record<K, unknown>>): unknown[];
}

/**
 * Builds and compiles a query once, with a slot for each value that changes from one run to the
 * next (`slots.x` where the value goes), for queries whose shape is fixed but whose parameters are
 * many: Kysely's compiled order of them is read back from the slots, so no caller counts
 * placeholders. Named after its SQL, so PostgreSQL parses and plans it once per connection rather
 * than on every run: for a sign-in's statements, run on the cores that hash, that halved the
 * database's CPU per sign-in (decision 139).
 */
export function slotted<K extends string>(
  keys: readonly K[],
  build: (slots: Readonly<Record<K, never>>) => { compile(): CompiledQuery<unknown> },
): SlottedQuery<K> {
  const slots = Object.fromEntries(keys.map((key) => [key, { [SLOT]: key } satisfies Slot]));
  const compiled = build(slots as unknown as Record<K, never>).compile();
  const order = compiled.parameters.map((parameter) => {
    if (typeof parameter === 'object' && parameter !== null && SLOT in parameter)
      return { slot: (parameter as Slot)[SLOT] as K };
    return { constant: parameter };
  });
  return {
    query: named(compiled),
    parameters: (values) => order.map((p) => ('slot' in p ? values[p.slot!] : p.constant)),
  };
}

/** The name a select-list entry comes back under: `t.col as name` → name, `t.col` → col. */
export type OutputName<S extends string> = S extends `${string} as ${infer A}`
  ? A
  : S extends `${string}.${infer C}`
    ? C
    : S;

/** Each output name of a select list to its position in the row's values. */
export type Positions<C extends readonly string[]> = { readonly [K in OutputName<C[number]>]: number };

/**
 * The position of each column of a select list written once as a constant, for readers of the
 * direct path's tuples: the list the query selects and the positions its reader reads come from
 * the same array, so a column moved in the list moves its position, and one removed from it
 * stops the type check at every read of it (issue 26).
 */
export function positionsOf<const C extends readonly string[]>(columns: C): Positions<C> {
  const positions: Record<string, number> = {};
  columns.forEach((column, i) => {
    const as = column.lastIndexOf(' as ');
    const dot = column.lastIndexOf('.');
    positions[as !== -1 ? column.slice(as + 4) : column.slice(dot + 1)] = i;
  });
  return Object.freeze(positions) as Positions<C>;
}
