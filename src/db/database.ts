import { Kysely, sql } from 'kysely';
import { type Migration, type MigrationResultSet, Migrator } from 'kysely/migration';
import pg from 'pg';
import type { Config } from '../config.ts';
import { namedStatementRunner } from './pg-statement.ts';
import { takeMigrationLock, UsherPostgresDialect } from './postgres-dialect.ts';
import { setDirectRunner } from './prepared.ts';
import type { Tables } from './schema.ts';
import { createSqliteDialect } from './sqlite-dialect.ts';
import { timeFromPostgres } from './stored-time.ts';

export type DialectName = 'sqlite' | 'postgres';

/** Migrations by their date-prefixed names (which sort in the order they run), for a dialect. */
export type MigrationSet = (dialect: DialectName) => Record<string, Migration>;

export interface Database {
  readonly db: Kysely<Tables>;
  readonly dialect: DialectName;
  /**
   * Applies pending migrations of `migrations` (every feature's: features.ts's schemaMigrations);
   * safe when several instances start at once.
   */
  migrate(migrations: MigrationSet): Promise<void>;
  /** Resolves when the database answers a trivial query within `timeoutMs`. */
  ping(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
  /** Connections in the pool (PostgreSQL), or the single SQLite connection. */
  poolStats(): { total: number; idle: number; waiting: number };
}

function sqlitePath(url: string): string {
  return url.slice('sqlite:'.length);
}

const pgTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date;
const readTimestamptz = (text: string): Date => timeFromPostgres(text, pgTimestamptz);

// int8 (ids, counts) as a bigint, as node:sqlite reads it, instead of pg's default string;
// timestamptz read from its digits and kept with its ISO text (db/stored-time.ts).
function typeParser(oid: number, format?: 'text' | 'binary'): (text: string) => unknown {
  if (oid === pg.types.builtins.INT8) return BigInt;
  if (oid === pg.types.builtins.TIMESTAMPTZ && format !== 'binary') return readTimestamptz;
  return pg.types.getTypeParser(oid, format);
}

function createPostgresPool(url: string, options: Config['database']): pg.Pool {
  const pooled = options.pooler === 'transaction';
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    // Through a transaction pooler no startup parameter: each transaction sets its own timeout
    // (db/postgres-dialect.ts); a statement on its own is bounded by the server's setting for the
    // role (`alter role … set statement_timeout`, docs/operating.md), as for any client there.
    ...(pooled ? {} : { statement_timeout: options.statementTimeoutMs }),
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser },
  });
  // An idle client whose server went away emits 'error'; unhandled, that would kill the process.
  // The pool drops the client, and the next checkout reconnects.
  pool.on('error', () => {});
  // A client can also lose its server while checked out between queries; its next query fails
  // (and the request gets a 503), so the bare 'error' event must not crash the process.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

class MigrationsFailed extends Error {
  readonly result: MigrationResultSet;
  constructor(result: MigrationResultSet) {
    super('migrations failed');
    this.result = result;
  }
}

/**
 * What to do about a failure a transaction pooler causes in a connection set up for a direct one:
 * PgBouncer refuses the statement timeout Usher sends at startup.
 */
function poolerHint(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return /unsupported startup parameter/i.test(message)
    ? ' (a transaction pooler such as PgBouncer is in between: set DATABASE_POOLER=transaction)'
    : '';
}

export function openDatabase(url: string, options: Config['database']): Database {
  const dialect: DialectName = url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  const pool = dialect === 'postgres' ? createPostgresPool(url, options) : undefined;
  const sqlite = pool ? undefined : createSqliteDialect(sqlitePath(url));
  const pooled = options.pooler === 'transaction';
  const db = new Kysely<Tables>({
    dialect:
      sqlite?.dialect ??
      new UsherPostgresDialect(
        { pool: pool! },
        { statementTimeoutPerTransactionMs: pooled ? options.statementTimeoutMs : undefined },
      ),
  });
  let closed = false;
  // A transaction pooler gives each statement whichever server connection is free, where a
  // statement named on another one does not exist (or one of the same name does): there every run
  // is parsed afresh as the unnamed statement, in the same round trip as before.
  const named = pool && namedStatementRunner(pool, typeParser, { unnamed: pooled });
  setDirectRunner(
    db,
    sqlite ? sqlite.run : (sql, parameters, name) => (closed ? undefined : named!(name, sql, parameters)),
  );

  return {
    db,
    dialect,
    async migrate(migrations) {
      const provider = { getMigrations: async () => migrations(dialect) };
      let outcome: MigrationResultSet;
      try {
        outcome =
          dialect === 'sqlite'
            ? await new Migrator({ db, provider }).migrateToLatest()
            : // One transaction whose first statement takes the lock (db/postgres-dialect.ts), so
              // that instances starting at once, through a pooler or not, migrate once: the others
              // wait, then find nothing pending. Migrations rewrite tables and are not cut off at
              // a request's statement timeout; a lock they wait for over a minute fails them.
              await db.transaction().execute(async (trx) => {
                await sql`select set_config('statement_timeout', '0', true), set_config('lock_timeout', '60s', true)`.execute(
                  trx,
                );
                await takeMigrationLock(trx);
                const result = await new Migrator({ db: trx, provider }).migrateToLatest();
                // Given a transaction, Kysely reports a failed migration instead of throwing:
                // thrown here, the transaction rolls back rather than commit what ran before it.
                if (result.error) throw new MigrationsFailed(result);
                return result;
              });
      } catch (error) {
        outcome = error instanceof MigrationsFailed ? error.result : { error };
      }
      const { error, results } = outcome;
      if (error) {
        const failed = results?.find((r) => r.status === 'Error')?.migrationName;
        throw new Error(
          `migration ${failed ?? '(setup)'} failed: ${String((error as Error).message ?? error)}${poolerHint(error)}`,
          { cause: error },
        );
      }
    },
    async ping(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error('database ping timed out'), { code: 'ETIMEDOUT' })),
          timeoutMs,
        );
      });
      try {
        await Promise.race([sql`select 1`.execute(db), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => {
      closed = true;
      return db.destroy();
    },
    poolStats: () =>
      pool
        ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
        : { total: 1, idle: 1, waiting: 0 },
  };
}
