import { Kysely, PostgresDialect, sql } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import pg from 'pg';
import type { Config } from '../config.ts';
import { namedStatementRunner } from './pg-statement.ts';
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
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs,
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

export function openDatabase(url: string, options: Config['database']): Database {
  const dialect: DialectName = url.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  const pool = dialect === 'postgres' ? createPostgresPool(url, options) : undefined;
  const sqlite = pool ? undefined : createSqliteDialect(sqlitePath(url));
  const db = new Kysely<Tables>({ dialect: sqlite?.dialect ?? new PostgresDialect({ pool: pool! }) });
  let closed = false;
  const named = pool && namedStatementRunner(pool, typeParser);
  setDirectRunner(
    db,
    sqlite ? sqlite.run : (sql, parameters, name) => (closed ? undefined : named!(name, sql, parameters)),
  );

  return {
    db,
    dialect,
    async migrate(migrations) {
      const migrator = new Migrator({
        db,
        provider: { getMigrations: async () => migrations(dialect) },
      });
      const { error, results } = await migrator.migrateToLatest();
      if (error) {
        const failed = results?.find((r) => r.status === 'Error')?.migrationName;
        throw new Error(
          `migration ${failed ?? '(setup)'} failed: ${String((error as Error).message ?? error)}`,
          {
            cause: error,
          },
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
