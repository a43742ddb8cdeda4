// Kysely's SqliteDialect talks to a better-sqlite3-shaped object. This adapts Node's built-in
// node:sqlite to it, so SQLite needs no native addon.
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type SqliteDatabase,
  SqliteDialect,
  SqliteDriver,
  type SqliteStatement,
} from 'kysely';
import { INT4_COLUMNS, TIMESTAMP_COLUMNS } from './schema.ts';
import { timeFromIso } from './stored-time.ts';

const STATEMENT_CACHE_SIZE = 200;
/** Up to this much of the database file is read through a memory map... */
const MMAP_BYTES = 1024 * 1024 * 1024;
/** ...when it is bigger than this at start. */
const MMAP_FROM_BYTES = 32 * 1024 * 1024;

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

type Row = Record<string, unknown>;

type Conversion = (value: unknown) => unknown;

/**
 * What PostgreSQL would return for this statement's columns: timestamps stored as text become
 * Dates and 32-bit integer columns numbers (db/schema.ts names them), worked out once per
 * prepared statement from the columns' origin: each column's name, position and conversion.
 */
function conversionsOf(
  statement: StatementSync,
): Array<{ name: string; index: number; convert: Conversion }> {
  const conversions: Array<{ name: string; index: number; convert: Conversion }> = [];
  statement.columns().forEach(({ column, name }, index) => {
    if (column === null) return;
    if (TIMESTAMP_COLUMNS.has(column)) conversions.push({ name, index, convert: timeFromIso as Conversion });
    else if (INT4_COLUMNS.has(column)) conversions.push({ name, index, convert: Number });
  });
  return conversions;
}

/** Converts rows (objects by column name, or arrays by position) in place; undefined when nothing needs it. */
function rowConverter<R extends Row | unknown[]>(
  statement: StatementSync,
  key: 'name' | 'index',
): ((rows: R[]) => R[]) | undefined {
  const conversions = conversionsOf(statement).map((c) => [c[key], c.convert] as const);
  if (conversions.length === 0) return undefined;
  return (rows) => {
    for (const row of rows) {
      for (const [at, convert] of conversions) {
        const value = (row as Record<string | number, unknown>)[at];
        if (value !== null && value !== undefined)
          (row as Record<string | number, unknown>)[at] = convert(value);
      }
    }
    return rows;
  };
}

function adapt(statement: StatementSync): SqliteStatement {
  // Ids are 64-bit: reading every integer as a bigint means none is ever rounded.
  statement.setReadBigInts(true);
  const reader = statement.columns().length > 0;
  const convert = reader ? rowConverter<Row>(statement, 'name') : undefined;
  const args = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
  return {
    reader,
    all: convert
      ? (parameters) => convert(statement.all(...args(parameters)) as Row[])
      : (parameters) => statement.all(...args(parameters)),
    run: (parameters) => statement.run(...args(parameters)),
    iterate: (parameters) => statement.iterate(...args(parameters)),
  };
}

/** A statement of the direct path (db/prepared.ts): its rows as arrays of values, converted alike. */
function tuples(statement: StatementSync): (parameters: ReadonlyArray<unknown>) => unknown[][] {
  statement.setReadBigInts(true);
  statement.setReturnArrays(true);
  const convert = rowConverter<unknown[]>(statement, 'index');
  const args = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
  return convert
    ? (parameters) => convert(statement.all(...args(parameters)) as unknown as unknown[][])
    : (parameters) => statement.all(...args(parameters)) as unknown as unknown[][];
}

/** Kysely's view of the connection, and the direct path's. */
export interface SqliteConnection extends SqliteDatabase {
  /** `sql` run with `parameters`, its rows as arrays of values (prepared once, kept). */
  tuples(sql: string, parameters: ReadonlyArray<unknown>): unknown[][];
}

/** `make` of each SQL text's prepared statement, kept for the next use; the oldest go past STATEMENT_CACHE_SIZE. */
function preparedOnce<S>(db: DatabaseSync, make: (statement: StatementSync) => S) {
  const cache = new Map<string, S>();
  return {
    get(sql: string): S {
      let statement = cache.get(sql);
      if (statement === undefined) {
        statement = make(db.prepare(sql));
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, statement);
      }
      return statement;
    },
    clear: () => cache.clear(),
  };
}

/** Opens (creating if needed) a SQLite file, or ':memory:', with durable, concurrent-safe settings. */
export function openSqlite(path: string): SqliteConnection {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path, { timeout: 5000 });
  // WAL lets readers run beside a writer (several processes may share the file); FULL makes a
  // committed write survive power loss, not only a process crash.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA foreign_keys = ON');
  // A database bigger than SQLite's page cache (2 MiB) is read through a memory map: on a million
  // users a random lookup would otherwise copy its leaf page in with a system call. A small one is
  // not: mapped pages are set up again on every read, a cost its cache hits do not have
  // (docs/benchmarks.md). Decided when the file is opened. Mapped pages are the OS's file cache,
  // counted in RSS as file-backed memory the kernel can reclaim (docs/decisions.md).
  if (path !== ':memory:' && fileSize(path) > MMAP_FROM_BYTES) db.exec(`PRAGMA mmap_size = ${MMAP_BYTES}`);

  // Preparing is a large share of a point lookup's cost; Kysely emits the same SQL text each time.
  // Kysely's statements (rows as objects) and the direct path's (rows as arrays) are kept apart.
  const statements = preparedOnce(db, adapt);
  const tupleStatements = preparedOnce(db, tuples);
  return {
    tuples: (sql, parameters) => tupleStatements.get(sql)(parameters),
    prepare: (sql) => statements.get(sql),
    close() {
      statements.clear();
      tupleStatements.clear();
      if (db.isOpen) db.close();
    },
  };
}

/**
 * Kysely's SqliteDriver hands its one connection to every caller at once. Harmless for single
 * statements (node:sqlite runs each synchronously), but while a transaction is open another
 * request's statement would run inside it, and be rolled back with it. This driver lends the
 * connection to one holder at a time: a transaction holds it from BEGIN to COMMIT.
 */
class LockingSqliteDriver extends SqliteDriver {
  #held = false;

  /** True while a caller holds the connection (a transaction, from BEGIN to COMMIT, or a query). */
  get held(): boolean {
    return this.#held;
  }

  readonly #waiting: Array<() => void> = [];

  override async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#held = true;
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    const next = this.#waiting.shift();
    // The lock passes straight to the next waiter, so it is never free while someone waits.
    if (next) next();
    else this.#held = false;
  }

  // IMMEDIATE takes the write lock at BEGIN. A deferred transaction that reads and then writes
  // fails at once with SQLITE_BUSY when another process wrote in between (busy_timeout does not
  // apply to that upgrade), which several instances on one file would hit.
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * The dialect, and the direct path of db/prepared.ts: a statement run at once on the connection
 * when Kysely has opened it and no caller holds it (node:sqlite runs a statement to its end before
 * anything else can touch the connection); undefined otherwise, and the query goes through Kysely.
 */
export function createSqliteDialect(path: string): {
  dialect: SqliteDialect;
  run: (sql: string, parameters: ReadonlyArray<unknown>) => unknown[][] | undefined;
} {
  let connection: SqliteConnection | undefined;
  let driver: LockingSqliteDriver | undefined;
  const config = {
    database: async () => {
      const opened = openSqlite(path);
      const close = opened.close;
      opened.close = () => {
        connection = undefined;
        close();
      };
      connection = opened;
      return opened;
    },
  };
  const dialect = new (class extends SqliteDialect {
    override createDriver(): Driver {
      driver = new LockingSqliteDriver(config);
      return driver;
    }
  })(config);
  return {
    dialect,
    run: (sql, parameters) =>
      connection && driver && !driver.held ? connection.tuples(sql, parameters) : undefined,
  };
}
